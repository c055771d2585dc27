// SPDX-License-Identifier: MIT
// ResNet-20 with GroupNorm: parameter count, gradient against central differences, GroupNorm
// and the strided convolution against direct formulas, determinism and batch sizes.
#include "model_test_util.hpp"
#include "models/gemm_conv.hpp"
#include "models/group_norm.hpp"
#include "models/resnet.hpp"

#include <doctest/doctest.h>
#include <stdexcept>

using namespace dtsim;
using namespace dtsim::testing;

namespace {

double mean_loss(const Model& m, const std::vector<float>& p, const BatchView& b, Workspace& ws) {
  const EvalResult r = m.evaluate(p, b, ws);
  return r.loss_sum / static_cast<double>(r.count);
}

} // namespace

TEST_SUITE("models") {
  TEST_CASE("ResNet-20: 269,722 parameters on 3x32x32 with 10 classes (He et al.: 0.27 M)") {
    const ResNet::Config c{{3, 32, 32}, 10, 3, 2};
    const ResNet m(c);
    CHECK(m.num_params() == 269722);
    CHECK(ResNet::count_params(c) == 269722.0);
    CHECK(m.describe().find("resnet20 3x32x32") == 0);
    // Fashion-MNIST input: one channel fewer in the stem only.
    CHECK(ResNet({{1, 28, 28}, 10, 3, 2}).num_params() == 269722 - 9 * 16 * 2);
  }

  TEST_CASE("ResNet: impossible configurations are refused with the reason") {
    CHECK(ResNet::config_error({{3, 32, 32}, 10, 3, 3}).find("divides 16") != std::string::npos);
    CHECK(ResNet::config_error({{784}, 10, 3, 2}).find("image data") != std::string::npos);
    CHECK(ResNet::config_error({{1, 3, 3}, 10, 3, 2}).find("at least 4x4") != std::string::npos);
    CHECK_THROWS_AS(ResNet({{3, 32, 32}, 10, 3, 5}), std::invalid_argument);
  }

  TEST_CASE("GemmConv: a strided, padded convolution equals the direct sum") {
    GemmConv c;
    c.in_channels = 2;
    c.out_channels = 3;
    c.in_height = 5;
    c.in_width = 6;
    c.stride = 2;
    const int n = 2;
    CHECK(c.out_height() == 3);
    CHECK(c.out_width() == 3);
    const OwnedBatch x = random_batch(2 * 5 * 6, n, 2, 1.0, 5); // planar input
    std::vector<float> w(c.num_params());
    Rng rng(6);
    c.init(w, 1.0, rng);
    std::vector<float> patches(c.patch_floats(n)), z(3 * c.out_pixels() * n);
    GemmScratch scratch;
    c.reserve(scratch, n);
    c.forward(w, x.features.data(), MapLayout::dataset(2, 5, 6), n, patches.data(), z.data(),
              scratch);
    for (int e = 0; e < n; ++e)
      for (int oy = 0; oy < 3; ++oy)
        for (int ox = 0; ox < 3; ++ox)
          for (int co = 0; co < 3; ++co) {
            double want = 0;
            for (int ky = 0; ky < 3; ++ky)
              for (int kx = 0; kx < 3; ++kx)
                for (int ci = 0; ci < 2; ++ci) {
                  const int iy = 2 * oy + ky - 1, ix = 2 * ox + kx - 1;
                  if (iy < 0 || iy >= 5 || ix < 0 || ix >= 6)
                    continue;
                  want += static_cast<double>(
                              w[static_cast<std::size_t>((ky * 3 + kx) * 2 + ci + 18 * co)]) *
                          static_cast<double>(
                              x.features[static_cast<std::size_t>(e * 60 + ci * 30 + iy * 6 + ix)]);
                }
            const float got = z[static_cast<std::size_t>(co * 9 * n + e * 9 + oy * 3 + ox)];
            CHECK(static_cast<double>(got) == doctest::Approx(want).epsilon(1e-5));
          }
  }

  TEST_CASE("GroupNorm: each example's group has mean beta and std gamma after the norm") {
    GroupNorm g;
    g.channels = 4;
    g.groups = 2;
    g.pixels = 6;
    std::vector<float> params(g.num_params());
    g.init(params);
    params[0] = 2.0f;                                        // gamma of channel 0 (group 0)
    params[1] = 2.0f;                                        // gamma of channel 1 (group 0)
    params[4] = 0.5f;                                        // beta of channel 0
    params[5] = 0.5f;                                        // beta of channel 1
    const OwnedBatch z = random_batch(4 * 6, 3, 2, 3.0, 11); // 3 examples, channel-major
    std::vector<float> y(z.features.size()), stats(2 * 2 * 3);
    g.forward(params, z.features.data(), 3, y.data(), stats.data());
    for (int e = 0; e < 3; ++e)
      for (int group = 0; group < 2; ++group) {
        double sum = 0, squares = 0;
        for (int p = 0; p < 6; ++p)
          for (int c = 2 * group; c < 2 * group + 2; ++c)
            sum += static_cast<double>(y[static_cast<std::size_t>(c * 18 + e * 6 + p)]);
        const double mean = sum / 12;
        for (int p = 0; p < 6; ++p)
          for (int c = 2 * group; c < 2 * group + 2; ++c) {
            const double d =
                static_cast<double>(y[static_cast<std::size_t>(c * 18 + e * 6 + p)]) - mean;
            squares += d * d;
          }
        CAPTURE(e);
        CAPTURE(group);
        CHECK(mean == doctest::Approx(group == 0 ? 0.5 : 0.0).epsilon(1e-5).scale(1));
        CHECK(std::sqrt(squares / 12) == doctest::Approx(group == 0 ? 2.0 : 1.0).epsilon(1e-3));
      }
  }

  TEST_CASE("ResNet: the gradient matches central differences of its own loss") {
    // A ResNet-8 (one block per stage) on 2x8x8 inputs keeps the check fast while covering
    // every layer kind: the stem, identity and option-A shortcuts, GroupNorm, the head.
    const ResNet m({{2, 8, 8}, 3, 1, 2});
    const OwnedBatch b = random_batch(2 * 8 * 8, 3, 3, 1.0, 21);
    std::vector<float> p = init_params(m, 22);
    Rng rng(23);
    for (float& x : p) // GroupNorm's gamma and beta away from 1 and 0 as well
      x += static_cast<float>(rng.uniform(-0.1, 0.1));
    std::vector<float> g(m.num_params());
    auto ws = m.make_workspace(3);
    const double loss = m.loss_and_grad(p, b.view(), g, *ws);
    CHECK(loss == doctest::Approx(mean_loss(m, p, b.view(), *ws)).epsilon(1e-6));
    // Every 11th of the 74,700 parameters (every layer has several), two forwards each.
    const float eps = 1e-3f;
    int checked = 0, far = 0;
    for (std::size_t i = 0; i < p.size(); i += 11) {
      const float saved = p[i];
      p[i] = saved + eps;
      const double up = mean_loss(m, p, b.view(), *ws);
      p[i] = saved - eps;
      const double down = mean_loss(m, p, b.view(), *ws);
      p[i] = saved;
      const double fd = (up - down) / (2.0 * static_cast<double>(eps));
      ++checked;
      // A ReLU kink inside [x - eps, x + eps] spoils the finite difference of a few
      // coordinates; they are counted, not excused one by one.
      if (std::abs(static_cast<double>(g[i]) - fd) > 1e-2 * std::abs(fd) + 5e-4)
        ++far;
    }
    CAPTURE(checked);
    CAPTURE(far);
    CHECK(checked > 700);
    CHECK(far * 200 <= checked); // at most 0.5%
  }

  TEST_CASE(
      "ResNet: same inputs give bit-identical gradients, and smaller batches fit the workspace") {
    const ResNet m({{1, 12, 12}, 4, 1, 2});
    const OwnedBatch b = random_batch(144, 5, 4, 1.0, 31);
    const std::vector<float> p = init_params(m, 32);
    auto ws = m.make_workspace(5);
    std::vector<float> g1(m.num_params()), g2(m.num_params()), g3(m.num_params());
    const double l1 = m.loss_and_grad(p, b.view(), g1, *ws);
    const BatchView first3{b.features.data(), 144, 3, b.labels.data()};
    m.loss_and_grad(p, first3, g3, *ws);
    const double l2 = m.loss_and_grad(p, b.view(), g2, *ws);
    CHECK(l1 == l2);
    CHECK(g1 == g2);
    // The 3-example batch in a fresh workspace gives what it gave in the shared one.
    auto fresh = m.make_workspace(3);
    std::vector<float> g4(m.num_params());
    m.loss_and_grad(p, first3, g4, *fresh);
    CHECK(g3 == g4);
    CHECK(g3 != g1);
  }
}
