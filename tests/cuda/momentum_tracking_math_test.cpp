// SPDX-License-Identifier: MIT
// cuda-resident momentum tracking's element math against the method's own host code
// (MomentumTracking::step, initialise, descend and correct, GossipProtocol's weighted sums);
// no GPU needed.
#include "cuda/resident_math.hpp"
#include "resident_test_vectors.hpp"
#include "sim/core/rng.hpp"
#include "sim/optimizers/momentum_tracking.hpp"
#include "sim/optimizers/weighted_sum.hpp"

#include <algorithm>
#include <doctest/doctest.h>
#include <vector>

using namespace dtsim;
using namespace dtsim::cuda;
using dtsim::test::each_tile_on_host;
using dtsim::test::random_vector;
using dtsim::test::relative_error;

namespace {

constexpr std::size_t kP = 4196; // the last tile of 4 x 256 partial

std::vector<float> row(const std::vector<float>& rows, std::size_t node) {
  return {rows.begin() + static_cast<std::ptrdiff_t>(node * kP),
          rows.begin() + static_cast<std::ptrdiff_t>((node + 1) * kP)};
}

} // namespace

TEST_SUITE("cuda") {
  TEST_CASE("Resident math: momentum tracking's step is MomentumTracking::step") {
    Rng rng = Rng::stream(31, "test", Rng::kNoNode);
    const float beta = 0.9f, wd = 0.001f, lr = 0.05f;
    // Node 1 of two: rows of 2 x kP.
    std::vector<float> grads = random_vector(rng, 2 * kP);
    const std::vector<float> models = random_vector(rng, 2 * kP);
    const std::vector<float> g0 = grads;
    for (const bool first : {true, false}) {
      CAPTURE(first);
      grads = g0;
      std::vector<float> momenta = random_vector(rng, 2 * kP), d = random_vector(rng, 2 * kP);
      const std::vector<float> m_before = momenta, d_before = d;
      std::vector<float> out(2 * kP, -9.0f);
      const int node = 1;
      float* out_ptr = out.data();
      const int first_flag = first ? 1 : 0;
      const StepBatch batch{&node, &out_ptr, &lr, beta, wd};
      const RuleRows rows{d.data(), nullptr, &first_flag};
      each_tile_on_host<4>(kP, [&](std::size_t e0, std::size_t stride) {
        momentum_tracking_step_tile<4>(batch, rows, grads.data(), models.data(), momenta.data(), kP,
                                       0, e0, stride);
      });
      CHECK(std::equal(out.begin(), out.begin() + kP, models.begin() + kP)); // x, sent as is
      if (first) { // g0 kept in d; nothing else written
        CHECK(row(d, 1) == row(g0, 1));
        CHECK(momenta == m_before);
        CHECK(std::all_of(out.begin() + kP, out.end(), [](float v) { return v == -9.0f; }));
        continue;
      }
      std::vector<float> m_host = row(m_before, 1), d_minus_m(kP);
      MomentumTracking::step(beta, wd, row(g0, 1), row(models, 1), m_host, row(d_before, 1),
                             d_minus_m);
      CHECK(relative_error(row(momenta, 1), m_host) < 1e-6);
      CHECK(relative_error({out.begin() + kP, out.end()}, d_minus_m) < 1e-6);
      // u = m - d in the gradient's row: what descend subtracts, lr u.
      std::vector<float> x_kernel = row(models, 1), x_host = row(models, 1);
      for (std::size_t e = 0; e < kP; ++e)
        x_kernel[e] -= lr * grads[kP + e];
      MomentumTracking::descend(lr, x_host, m_host, row(d_before, 1));
      CHECK(relative_error(x_kernel, x_host) < 1e-6);
      CHECK(row(momenta, 0) == row(m_before, 0)); // node 0 untouched
      CHECK(row(d, 1) == row(d_before, 1));       // d is the mixing's to write
    }
  }

  TEST_CASE("Resident math: momentum tracking's start is MomentumTracking::initialise") {
    Rng rng = Rng::stream(32, "test", Rng::kNoNode);
    const float beta = 0.9f, wd = 0.001f;
    const std::vector<float> g0 = random_vector(rng, kP), gbar = random_vector(rng, kP);
    const std::vector<float> x = random_vector(rng, kP);
    std::vector<float> d_host = g0, m_host(kP), out_host(kP);
    MomentumTracking::initialise(beta, wd, gbar, x, d_host, m_host, out_host);
    std::vector<float> d = g0, m(kP), out(kP), u(kP);
    for (std::size_t e = 0; e < kP; ++e)
      momentum_tracking_start_element(beta, wd, gbar[e], x[e], &d[e], &m[e], &out[e], &u[e]);
    CHECK(relative_error(d, d_host) < 1e-6);
    CHECK(relative_error(m, m_host) < 1e-6);
    // d - m cancels much of d and m: their own rounding, relative to |d - m|, is larger.
    CHECK(relative_error(out, out_host) < 1e-5);
    for (std::size_t e = 0; e < kP; ++e)
      REQUIRE(out[e] == d[e] - m[e]);
    std::vector<float> minus_out(kP);
    std::transform(out.begin(), out.end(), minus_out.begin(), [](float v) { return -v; });
    CHECK(u == minus_out); // u = m - d, exactly -(d - m)
  }

  TEST_CASE("Resident math: momentum tracking's correction mixing is the method's") {
    // d = W_ii (d - m)_i + sum_j W_ij (d - m)_j + m, from the messages' second vectors: self
    // the node's own message at the same offset as the inputs.
    Rng rng = Rng::stream(33, "test", Rng::kNoNode);
    std::vector<std::vector<float>> messages; // (x, d - m) each
    for (int k = 0; k < 3; ++k)
      messages.push_back(random_vector(rng, 2 * kP));
    const std::vector<float> momenta = random_vector(rng, 2 * kP);
    std::vector<float> d(2 * kP, -9.0f);
    const std::vector<int> node{1}, first{0, 2};
    const std::vector<const float*> self{messages[0].data()};
    const std::vector<const float*> in{messages[1].data(), messages[2].data()};
    const std::vector<float> self_w{0.5f}, in_w{0.3f, 0.2f};
    MixBatch batch{node.data(), self.data(), self_w.data(), first.data(), in.data(), in_w.data()};
    batch.input_offset = kP;
    batch.add_rows = momenta.data();
    each_tile_on_host<4>(kP, [&](std::size_t e0, std::size_t stride) {
      mix_tile<4>(batch, d.data(), nullptr, kP, 0, e0, stride);
    });
    std::vector<float> host(kP);
    weighted_sum(
        self_w[0], messages[0].data() + kP, in_w, [&](std::size_t c) { return in[c] + kP; }, kP,
        host.data());
    MomentumTracking::correct(host, row(momenta, 1));
    CHECK(relative_error(row(d, 1), host) < 1e-6);
    CHECK(std::all_of(d.begin(), d.begin() + kP, [](float v) { return v == -9.0f; }));
  }
}
