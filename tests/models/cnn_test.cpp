// SPDX-License-Identifier: MIT
// Cnn (LeNet): layout, gradients against a double reference, per-example columns, training.
#include "model_test_util.hpp"
#include "models/cnn.hpp"
#include "sim/core/rng.hpp"

#include <algorithm>
#include <array>
#include <cmath>
#include <doctest/doctest.h>
#include <limits>
#include <stdexcept>
#include <vector>

using namespace dtsim;
using namespace dtsim::testing;

namespace {

Cnn::Config lenet_config(std::vector<int> shape) {
  Cnn::Config c;
  c.name = "lenet";
  c.padding = {shape[1] == 28 ? 2 : 0, 0};
  c.input_shape = std::move(shape);
  return c;
}

// Odd map sizes (a pooled row and column dropped in both stages), channel counts that leave
// remainders in every kernel tile, padding in both stages.
Cnn::Config small_config() {
  Cnn::Config c;
  c.input_shape = {2, 11, 11};
  c.channels = {7, 5};
  c.padding = {1, 1};
  c.kernel = 3;
  c.hidden = {6};
  c.num_classes = 3;
  return c;
}

// Independent double-precision forward pass written from the documented layout: conv W as
// (ky, kx, ci, co) with co fastest then b; input channel planes (CHW); flatten order
// (y, x, c); dense W out x in column-major then b.
struct Reference {
  Cnn::Config c;

  // Mean loss over the batch. Also gives the argmax per example and the smallest distance of
  // any ReLU input to 0 or of a pooling window's maximum to its runner-up (finite differences
  // are valid only for steps well below it).
  double loss(const std::vector<double>& p, const OwnedBatch& b, std::vector<int>* argmax = nullptr,
              double* margin = nullptr) const {
    double total = 0.0, min_margin = std::numeric_limits<double>::infinity();
    for (int e = 0; e < b.count(); ++e) {
      int ch = c.input_shape[0], h = c.input_shape[1], w = c.input_shape[2];
      // map[(ch * h + y) * w + x]
      std::vector<double> map(b.features.begin() + static_cast<long>(e) * b.num_features,
                              b.features.begin() + static_cast<long>(e + 1) * b.num_features);
      std::size_t off = 0;
      for (std::size_t s = 0; s < c.channels.size(); ++s) {
        const int co_n = c.channels[s], k = c.kernel, pad = c.padding[s];
        const int ho = h + 2 * pad - k + 1, wo = w + 2 * pad - k + 1;
        const std::size_t bias = off + static_cast<std::size_t>(k * k * ch * co_n);
        std::vector<double> z(static_cast<std::size_t>(co_n * ho * wo));
        for (int co = 0; co < co_n; ++co)
          for (int y = 0; y < ho; ++y)
            for (int x = 0; x < wo; ++x) {
              double sum = p[bias + co];
              for (int ky = 0; ky < k; ++ky)
                for (int kx = 0; kx < k; ++kx)
                  for (int ci = 0; ci < ch; ++ci) {
                    const int iy = y + ky - pad, ix = x + kx - pad;
                    if (iy < 0 || iy >= h || ix < 0 || ix >= w)
                      continue;
                    sum +=
                        p[off + static_cast<std::size_t>(((ky * k + kx) * ch + ci) * co_n + co)] *
                        map[static_cast<std::size_t>((ci * h + iy) * w + ix)];
                  }
              z[static_cast<std::size_t>((co * ho + y) * wo + x)] = sum;
            }
        off = bias + co_n;
        const int hq = ho / 2, wq = wo / 2;
        std::vector<double> pooled(static_cast<std::size_t>(co_n * hq * wq));
        for (int co = 0; co < co_n; ++co)
          for (int y = 0; y < hq; ++y)
            for (int x = 0; x < wq; ++x) {
              std::array<double, 4> v{};
              for (int q = 0; q < 4; ++q)
                v[static_cast<std::size_t>(q)] =
                    z[static_cast<std::size_t>((co * ho + 2 * y + q / 2) * wo + 2 * x + q % 2)];
              std::sort(v.begin(), v.end());
              min_margin = std::min({min_margin, std::fabs(v[3]), v[3] - v[2]});
              pooled[static_cast<std::size_t>((co * hq + y) * wq + x)] = std::max(v[3], 0.0);
            }
        map = pooled;
        ch = co_n;
        h = hq;
        w = wq;
      }
      // Flatten in (y, x, c) order.
      std::vector<double> a(static_cast<std::size_t>(ch * h * w));
      for (int y = 0; y < h; ++y)
        for (int x = 0; x < w; ++x)
          for (int cc = 0; cc < ch; ++cc)
            a[static_cast<std::size_t>((y * w + x) * ch + cc)] =
                map[static_cast<std::size_t>((cc * h + y) * w + x)];
      std::vector<int> sizes{static_cast<int>(a.size())};
      sizes.insert(sizes.end(), c.hidden.begin(), c.hidden.end());
      sizes.push_back(c.num_classes);
      int predicted = 0;
      total += reference_dense_loss(p, off, a, sizes, b.labels[static_cast<std::size_t>(e)],
                                    predicted, min_margin);
      if (argmax)
        argmax->push_back(predicted);
    }
    if (margin)
      *margin = min_margin;
    return total / b.count();
  }
};

double grad_and_loss(const Model& m, const std::vector<float>& p, BatchView batch,
                     std::vector<float>& grad, int max_batch = 64) {
  auto ws = m.make_workspace(max_batch);
  grad.assign(m.num_params(), NAN);
  return m.loss_and_grad(p, batch, grad, *ws);
}

// Checks the model's gradient against central differences of the double reference on the
// parameters `indices`; returns the worst relative error.
double check_gradient(const Cnn::Config& config, const OwnedBatch& b, std::uint64_t seed,
                      const std::vector<std::size_t>& indices, double* loss_error) {
  const Cnn m(config);
  const Reference ref{config};
  std::vector<float> p = init_params(m, seed);
  Rng rng(seed + 100);
  for (float& x : p) // non-zero biases, so that their gradients and the masks are exercised
    x += static_cast<float>(rng.uniform(-0.05, 0.05));
  std::vector<float> g;
  const double loss = grad_and_loss(m, p, b.view(), g);
  std::vector<double> pd(p.begin(), p.end());
  double margin = 0.0;
  const double ref_loss = ref.loss(pd, b, nullptr, &margin);
  *loss_error = std::fabs(loss - ref_loss) / ref_loss;
  const double eps = 1e-7;
  REQUIRE(margin > 100 * eps);
  double worst = 0.0;
  for (std::size_t i : indices) {
    const double saved = pd[i];
    pd[i] = saved + eps;
    const double up = ref.loss(pd, b);
    pd[i] = saved - eps;
    const double down = ref.loss(pd, b);
    pd[i] = saved;
    const double fd = (up - down) / (2.0 * eps);
    worst =
        std::max(worst, std::fabs(static_cast<double>(g[i]) - fd) / std::max(1e-2, std::fabs(fd)));
  }
  return worst;
}

// 1 x 28 x 28 images of three classes: a horizontal bar, a vertical bar, or a square, at a
// random place, plus noise.
OwnedBatch shapes_problem(int count, std::uint64_t seed) {
  Rng rng(seed);
  OwnedBatch b;
  b.num_features = 784;
  for (int e = 0; e < count; ++e) {
    const int cls = static_cast<int>(rng.below(3));
    const int r = 4 + static_cast<int>(rng.below(16)), c = 4 + static_cast<int>(rng.below(16));
    for (int y = 0; y < 28; ++y)
      for (int x = 0; x < 28; ++x) {
        const bool on = cls == 0   ? (y >= r && y < r + 3 && x >= 4 && x < 24)
                        : cls == 1 ? (x >= c && x < c + 3 && y >= 4 && y < 24)
                                   : (y >= r && y < r + 8 && x >= c && x < c + 8);
        b.features.push_back((on ? 1.5f : -0.5f) + static_cast<float>(0.3 * rng.normal()));
      }
    b.labels.push_back(cls);
  }
  return b;
}

EvalResult eval_all(const Model& m, const std::vector<float>& p, const OwnedBatch& b) {
  auto ws = m.make_workspace(b.count());
  return m.evaluate(p, b.view(), *ws);
}

} // namespace

TEST_SUITE("models") {
  TEST_CASE("Cnn: LeNet sizes for 1x28x28 and 3x32x32, layout offsets, flops") {
    const Cnn fmnist(lenet_config({1, 28, 28}));
    // conv 5x5x1x6 + 6, conv 5x5x6x16 + 16, 400-120, 120-84, 84-10: LeNet-5's 61706.
    CHECK(fmnist.num_params() == 156 + 2416 + 48120 + 10164 + 850);
    CHECK(fmnist.num_params() == 61706);
    CHECK(fmnist.describe() == "lenet 1x28x28 conv5x5 6(pad 2)-16 dense 120-84-10 (61706 params)");
    REQUIRE(fmnist.convs().size() == 2);
    CHECK(fmnist.convs()[0].output().height == 28);
    CHECK(fmnist.convs()[1].in_height == 14);
    CHECK(fmnist.convs()[1].output().height == 10);
    CHECK(fmnist.convs()[1].offset == 156);
    CHECK(fmnist.flat_shape().features() == 400);
    REQUIRE(fmnist.dense().size() == 3);
    CHECK(fmnist.dense()[0].offset == 156 + 2416);
    CHECK(fmnist.dense()[0].in == 400);
    // Forward and weight gradient of every layer, input gradient of all but the first conv.
    const double conv1 = 28 * 28 * 6 * 25.0, conv2 = 10 * 10 * 16 * 150.0;
    CHECK(fmnist.flops_per_example() ==
          doctest::Approx(2.0 * (2 * conv1 + 3 * conv2 + 3 * (400 * 120 + 120 * 84 + 84 * 10))));

    const Cnn cifar(lenet_config({3, 32, 32}));
    CHECK(cifar.num_params() == 456 + 2416 + 48120 + 10164 + 850);
    CHECK(cifar.describe() == "lenet 3x32x32 conv5x5 6-16 dense 120-84-10 (62006 params)");
    CHECK(cifar.flat_shape().features() == 400);
    CHECK(Cnn::count_params(lenet_config({3, 32, 32})) == 62006.0);
  }

  TEST_CASE("Cnn: configurations that cannot work are refused") {
    Cnn::Config c = small_config();
    CHECK(Cnn::config_error(c).empty());
    c.input_shape = {2, 3, 3}; // stage 1 leaves 3x3, pooled to 1x1; stage 2 gets 1x1 + padding
    CHECK(Cnn::config_error(c).find("too small: conv stage 2") != std::string::npos);
    CHECK_THROWS_AS(Cnn{c}, std::invalid_argument);
    c = small_config();
    c.padding = {1};
    CHECK(Cnn::config_error(c).find("one padding per conv stage") != std::string::npos);
    c = small_config();
    c.padding = {3, 0};
    CHECK(Cnn::config_error(c).find("paddings in [0, kernel - 1]") != std::string::npos);
    c = small_config();
    c.input_shape = {121};
    CHECK(Cnn::config_error(c).find("channels x height x width") != std::string::npos);
  }

  TEST_CASE("Cnn: init is He-uniform per conv and dense layer, Glorot at the output, seeded") {
    const Cnn m(lenet_config({1, 28, 28}));
    const std::vector<float> p = init_params(m, 5);
    auto check_range = [&](std::size_t first, std::size_t count, double limit) {
      const auto w =
          Eigen::Map<const Eigen::VectorXf>(p.data() + first, static_cast<Eigen::Index>(count));
      CHECK(w.cwiseAbs().maxCoeff() <= limit);
      CHECK(w.cwiseAbs().maxCoeff() > 0.9 * limit);
      CHECK(static_cast<double>(w.squaredNorm()) / static_cast<double>(count) ==
            doctest::Approx(limit * limit / 3.0).epsilon(0.2));
    };
    check_range(0, 150, std::sqrt(6.0 / 25));
    check_range(156, 2400, std::sqrt(6.0 / 150));
    check_range(156 + 2416, 48000, std::sqrt(6.0 / 400));
    check_range(m.dense()[2].offset, 840, std::sqrt(6.0 / 94));
    for (std::size_t i = 150; i < 156; ++i) // conv1 biases
      CHECK(p[i] == 0.0f);
    CHECK(init_params(m, 5) == p);
    CHECK(init_params(m, 6) != p);
  }

  TEST_CASE("Cnn: gradient of a small CNN matches central differences of a double reference") {
    // 19 examples: two lane blocks processed together, one alone, and idle lanes.
    const OwnedBatch b = random_batch(2 * 11 * 11, 19, 3, 1.0, 41);
    const Cnn m(small_config());
    double loss_error = 0.0;
    std::vector<std::size_t> idx; // every other parameter: each layer's weights and biases
    for (std::size_t i = 0; i < m.num_params(); i += 2)
      idx.push_back(i);
    const double worst = check_gradient(small_config(), b, 42, idx, &loss_error);
    CHECK(loss_error < 1e-5);
    CHECK(worst < 2e-3);
  }

  TEST_CASE("Cnn: LeNet gradients on 1x28x28 and 3x32x32 match the reference") {
    for (const std::vector<int>& shape :
         {std::vector<int>{1, 28, 28}, std::vector<int>{3, 32, 32}}) {
      const Cnn::Config c = lenet_config(shape);
      const Cnn m(c);
      CAPTURE(m.describe());
      const OwnedBatch b = random_batch(shape[0] * shape[1] * shape[2], 3, 10, 1.0, 43);
      // Every conv parameter, and a sample of the dense ones (each layer's first and last).
      std::vector<std::size_t> idx;
      for (std::size_t i = 0; i < m.dense()[0].offset; i += 29)
        idx.push_back(i);
      for (const DenseLayer& l : m.dense())
        for (std::size_t i = 0; i < 8; ++i) {
          idx.push_back(l.offset + i * 37 % (l.num_params()));
          idx.push_back(l.offset + l.num_params() - 1 - i);
        }
      double loss_error = 0.0;
      CHECK(check_gradient(c, b, 44, idx, &loss_error) < 2e-3);
      CHECK(loss_error < 1e-5);
    }
  }

  TEST_CASE("Cnn: evaluate agrees with loss_and_grad and the reference argmax") {
    const Cnn m(small_config());
    const Reference ref{small_config()};
    const OwnedBatch b = random_batch(2 * 11 * 11, 37, 3, 2.0, 45);
    const std::vector<float> p = init_params(m, 46);
    std::vector<float> g;
    const double loss = grad_and_loss(m, p, b.view(), g);
    const EvalResult r = eval_all(m, p, b);
    CHECK(r.count == 37);
    CHECK(r.loss_sum / 37.0 == doctest::Approx(loss).epsilon(1e-6));
    std::vector<int> argmax;
    ref.loss(std::vector<double>(p.begin(), p.end()), b, &argmax);
    std::int64_t hits = 0;
    for (int e = 0; e < 37; ++e)
      hits += argmax[static_cast<std::size_t>(e)] == b.labels[static_cast<std::size_t>(e)] ? 1 : 0;
    CHECK(r.correct == hits);
    CHECK(hits > 0);
    auto ws = m.make_workspace(4);
    CHECK(m.evaluate(p, BatchView{b.features.data(), b.num_features, 0, b.labels.data()}, *ws)
              .count == 0);
  }

  TEST_CASE("Cnn: results are bitwise independent of max_batch and of earlier calls") {
    const Cnn m(small_config());
    const OwnedBatch b = random_batch(2 * 11 * 11, 11, 3, 1.0, 47);
    const OwnedBatch other = random_batch(2 * 11 * 11, 40, 3, 3.0, 48);
    const std::vector<float> p = init_params(m, 49);
    std::vector<float> g_small, g_large(m.num_params());
    const double loss_small = grad_and_loss(m, p, b.view(), g_small, 11);
    auto ws = m.make_workspace(40);
    m.loss_and_grad(p, other.view(), g_large, *ws); // leaves other data in every lane
    const double loss_large = m.loss_and_grad(p, b.view(), g_large, *ws);
    CHECK(loss_small == loss_large);
    CHECK(g_small == g_large);
  }

  TEST_CASE("Cnn: per-example gradients are the columns whose mean is the batch gradient") {
    for (const Cnn::Config& c : {small_config(), lenet_config({1, 28, 28})}) {
      const Cnn m(c);
      CAPTURE(m.describe());
      const int n = 11, features = c.input_shape[0] * c.input_shape[1] * c.input_shape[2];
      const OwnedBatch b = random_batch(features, n, c.num_classes, 1.0, 50);
      const std::vector<float> p = init_params(m, 51);
      const std::size_t d = m.num_params();
      REQUIRE(m.supports_per_example_grads());
      std::vector<float> g(d), cols(d * n, NAN), g_one;
      auto ws = m.make_workspace(16);
      const double loss = m.loss_and_grad(p, b.view(), g, *ws);
      const std::vector<float> g_batch = g;
      CHECK(m.loss_and_per_example_grads(p, b.view(), g, cols, *ws) == loss);
      // The same batched pass, bit for bit. (Into the same buffer: Eigen's row sums behind
      // the dense layers' bias gradients round differently for differently aligned outputs.)
      CHECK(g == g_batch);
      double worst_mean = 0.0, worst_column = 0.0;
      for (std::size_t i = 0; i < d; ++i) {
        double mean = 0.0;
        for (int e = 0; e < n; ++e)
          mean += static_cast<double>(cols[static_cast<std::size_t>(e) * d + i]);
        worst_mean = std::max(worst_mean, std::fabs(mean / n - static_cast<double>(g_batch[i])));
      }
      for (int e = 0; e < n; ++e) {
        grad_and_loss(m, p, b.example(e), g_one, 1);
        for (std::size_t i = 0; i < d; ++i)
          worst_column =
              std::max(worst_column,
                       std::fabs(static_cast<double>(cols[static_cast<std::size_t>(e) * d + i]) -
                                 static_cast<double>(g_one[i])) /
                           std::max(1.0, std::fabs(static_cast<double>(g_one[i]))));
      }
      CHECK(worst_mean < 1e-5);
      CHECK(worst_column < 1e-4);
    }
  }

  TEST_CASE("Cnn: misuse of workspaces, labels and per-example sizes is an internal error") {
    const Cnn m(small_config()), other(small_config());
    const OwnedBatch b = random_batch(2 * 11 * 11, 5, 3, 1.0, 52);
    const std::vector<float> p = init_params(m, 53);
    std::vector<float> g(m.num_params());
    auto small = m.make_workspace(4);
    CHECK_THROWS_AS(m.loss_and_grad(p, b.view(), g, *small), std::logic_error);
    auto foreign = other.make_workspace(8);
    CHECK_THROWS_AS(m.loss_and_grad(p, b.view(), g, *foreign), std::logic_error);
    OwnedBatch bad = b;
    bad.labels[2] = 3;
    auto ws = m.make_workspace(8);
    CHECK_THROWS_AS(m.loss_and_grad(p, bad.view(), g, *ws), std::logic_error);
    CHECK_THROWS_AS(m.evaluate(p, bad.view(), *ws), std::logic_error);
    std::vector<float> cols(m.num_params() * 4);
    CHECK_THROWS_AS(m.loss_and_per_example_grads(p, b.view(), g, cols, *ws), std::logic_error);
  }

  TEST_CASE("Cnn: a few dozen SGD steps of LeNet on a tiny image set cut the loss") {
    const Cnn m(lenet_config({1, 28, 28}));
    const OwnedBatch data = shapes_problem(96, 54);
    std::vector<float> p = init_params(m, 55), g(m.num_params());
    const EvalResult before = eval_all(m, p, data);
    auto ws = m.make_workspace(16);
    for (int s = 0; s < 36; ++s) {
      const int start = (s * 16) % (data.count() - 16 + 1);
      const BatchView bv{data.features.data() + static_cast<std::size_t>(start) * 784, 784, 16,
                         data.labels.data() + start};
      m.loss_and_grad(p, bv, g, *ws);
      for (std::size_t i = 0; i < p.size(); ++i)
        p[i] -= 0.05f * g[i];
    }
    const EvalResult after = eval_all(m, p, data);
    MESSAGE("loss " << before.loss_sum / 96 << " -> " << after.loss_sum / 96 << ", correct "
                    << after.correct << "/96");
    CHECK(after.loss_sum < 0.3 * before.loss_sum);
    CHECK(after.correct >= 90);
  }
}
