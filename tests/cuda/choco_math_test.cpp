// SPDX-License-Identifier: MIT
// cuda-resident CHOCO-SGD's element math against the method's own host code (LocalUpdate's
// step, ChocoSgd::difference and consensus, Qsgd::encode given the same uniforms) and the
// device's counter-based uniforms; no GPU needed.
#include "cuda/resident_math.hpp"
#include "resident_test_vectors.hpp"
#include "sim/core/params.hpp"
#include "sim/core/rng.hpp"
#include "sim/optimizers/choco_sgd.hpp"
#include "sim/optimizers/compression/qsgd.hpp"
#include "sim/optimizers/local_update.hpp"
#include "sim/optimizers/weighted_sum.hpp"
#include "support/params_helper.hpp"

#include <algorithm>
#include <cmath>
#include <doctest/doctest.h>
#include <limits>
#include <set>
#include <vector>

using namespace dtsim;
using namespace dtsim::cuda;
using dtsim::test::each_tile_on_host;
using dtsim::test::random_vector;
using dtsim::test::relative_error;

namespace {

// Eight buckets of 512 and a partial one of 100.
constexpr std::size_t kP = 4196;
constexpr std::size_t kBucket = 512;

Params qsgd_params(int bits, std::size_t bucket) {
  return testing::make_params({{"bits", std::to_string(bits)}, {"bucket", std::to_string(bucket)}});
}

} // namespace

TEST_SUITE("cuda") {
  TEST_CASE("Resident math: CHOCO-SGD's step before the compression is the method's") {
    Rng rng = Rng::stream(21, "test", Rng::kNoNode);
    const std::vector<float> g = random_vector(rng, kP), x = random_vector(rng, kP);
    const std::vector<float> xhat = random_vector(rng, kP), sum = random_vector(rng, kP);
    const std::vector<float> m0 = random_vector(rng, kP);
    for (const bool adapt_then_combine : {true, false}) {
      CAPTURE(adapt_then_combine);
      const ResidentVectors::LocalUpdateRule rule{0.9f, 0.001f, true};
      const float lr = 0.05f, gamma = 0.6f;
      // The host: LocalUpdate's step into x_half, then ChocoSgd::difference.
      std::vector<float> m_host = m0, half_host(kP), d_host(kP);
      LocalUpdate::step(rule, g, x, lr, m_host, half_host);
      ChocoSgd::difference(adapt_then_combine, gamma, half_host, xhat, sum, d_host);
      // The device's elements.
      const int node = 0;
      const StepBatch batch{&node, nullptr, &lr, rule.momentum, rule.weight_decay, rule.nesterov};
      const ChocoRows rows{nullptr, nullptr, nullptr, gamma, adapt_then_combine};
      std::vector<float> m_dev = m0, half_dev(kP), d_dev(kP);
      for (std::size_t e = 0; e < kP; ++e)
        d_dev[e] = choco_difference_element(batch, rows, lr, g[e], x[e], m0[e], xhat[e], sum[e],
                                            &m_dev[e], &half_dev[e]);
      CHECK(relative_error(half_dev, half_host) < 1e-6);
      CHECK(relative_error(d_dev, d_host) < 1e-6);
      CHECK(relative_error(m_dev, m_host) < 1e-6);
    }
  }

  TEST_CASE("Resident math: the device's QSGD elements are Qsgd::encode's, given its uniforms") {
    Rng rng = Rng::stream(22, "test", Rng::kNoNode);
    std::vector<float> d = random_vector(rng, kP);
    std::fill(d.begin() + 2 * kBucket, d.begin() + 3 * kBucket, 0.0f); // a zero bucket
    for (const int bits : {1, 4, 8}) {
      for (const bool contractive : {false, true}) {
        CAPTURE(bits);
        CAPTURE(contractive);
        CompressorSetup setup{kP};
        setup.contractive = contractive;
        Qsgd qsgd(qsgd_params(bits, kBucket), setup);
        Rng stream = Rng::stream(23, "test", Rng::kNoNode);
        Rng draws = stream; // the same numbers that encode() draws
        std::vector<float> host(kP);
        const EncodeStats st = qsgd.encode(d, host, stream);
        std::vector<float> u(kP);
        fill_uniforms(draws, u);
        std::vector<float> dev(kP);
        double error_sq = 0, norm_sq = 0;
        for (std::size_t first = 0; first < kP; first += kBucket) {
          const std::size_t len = std::min(kBucket, kP - first);
          const float norm = Qsgd::bucket_norm(std::span<const float>(d).subspan(first, len));
          const QsgdBucket q = qsgd_bucket(norm, len, bits, contractive);
          float errors = 0;
          for (std::size_t e = first; e < first + len; ++e) {
            dev[e] = qsgd_element(q, d[e], u[e]);
            errors += (dev[e] - d[e]) * (dev[e] - d[e]);
          }
          error_sq += q.pass_through ? 0.0 : static_cast<double>(errors);
          norm_sq += static_cast<double>(norm) * static_cast<double>(norm);
        }
        CHECK(dev == host); // the same norms and uniforms: the same levels, bit for bit
        CHECK(std::all_of(dev.begin() + 2 * kBucket, dev.begin() + 3 * kBucket,
                          [](float v) { return v == 0.0f; }));
        CHECK(norm_sq == doctest::Approx(st.norm_sq).epsilon(1e-6));
        CHECK(error_sq == doctest::Approx(st.error_sq).epsilon(1e-5));
        CHECK(error_sq > 0);
      }
    }
  }

  TEST_CASE("Resident math: small QSGD buckets, a thread each, are Qsgd::encode's too") {
    // qsgd_small_bucket (buckets under kQsgdSmallBucket, a device thread per bucket) with the
    // host's norms and uniforms gives Qsgd::encode's values bit for bit; its own norm, a
    // sequential sum, is the host's to rounding. A zero bucket passes through.
    Rng rng = Rng::stream(24, "test", Rng::kNoNode);
    std::vector<float> d = random_vector(rng, kP);
    std::fill(d.begin() + 10, d.begin() + 15, 0.0f); // bucket 2 of 5
    for (const std::size_t bucket : {std::size_t{5}, std::size_t{13}}) {
      for (const bool contractive : {false, true}) {
        CAPTURE(bucket);
        CAPTURE(contractive);
        CompressorSetup setup{kP};
        setup.contractive = contractive;
        Qsgd qsgd(qsgd_params(4, bucket), setup);
        Rng stream = Rng::stream(25, "test", Rng::kNoNode);
        Rng draws = stream; // the same numbers that encode() draws
        std::vector<float> host(kP), xhat(kP, 1.0f);
        const EncodeStats st = qsgd.encode(d, host, stream);
        std::vector<float> u(kP);
        fill_uniforms(draws, u);
        std::vector<float> dev(kP);
        double error_sq = 0;
        for (std::size_t first = 0; first < kP; first += bucket) {
          const std::size_t len = std::min(bucket, kP - first);
          const auto part = std::span<const float>(d).subspan(first, len);
          const float norm = Qsgd::bucket_norm(part);
          CHECK(sequential_norm(part.data(), len) == doctest::Approx(norm).epsilon(1e-6));
          float errors = 0;
          qsgd_small_bucket(
              d.data(), first, len, norm, 4, contractive, [&](std::size_t e) { return u[e]; },
              dev.data(), xhat.data(), errors);
          error_sq += static_cast<double>(errors);
        }
        CHECK(dev == host);
        for (std::size_t e = 0; e < kP; ++e) // xhat += q
          CHECK(xhat[e] == 1.0f + dev[e]);
        CHECK(std::all_of(dev.begin() + 10, dev.begin() + 15, [](float v) { return v == 0.0f; }));
        CHECK(error_sq == doctest::Approx(st.error_sq).epsilon(1e-5));
        CHECK(error_sq > 0);
      }
    }
  }

  TEST_CASE("Resident math: a non-finite QSGD bucket passes through, as on the host") {
    const float inf = std::numeric_limits<float>::infinity();
    for (const float norm : {0.0f, inf, std::nanf("")}) {
      const QsgdBucket q = qsgd_bucket(norm, kBucket, 4, true);
      CHECK(q.pass_through);
      CHECK(qsgd_element(q, 0.25f, 0.5f) == 0.25f);
    }
    CHECK_FALSE(qsgd_bucket(1.0f, kBucket, 4, true).pass_through);
  }

  TEST_CASE("Resident math: CHOCO-SGD's mixing end is ChocoSgd::consensus") {
    Rng rng = Rng::stream(24, "test", Rng::kNoNode);
    // Node 1 mixes its own q (message 0) with messages 1 and 2.
    std::vector<std::vector<float>> q;
    for (int k = 0; k < 3; ++k)
      q.push_back(random_vector(rng, kP));
    const std::vector<float> half = random_vector(rng, 2 * kP), xhat = random_vector(rng, 2 * kP);
    const std::vector<float> s0 = random_vector(rng, 2 * kP);
    for (const bool adapt_then_combine : {true, false}) {
      CAPTURE(adapt_then_combine);
      const float gamma = 0.6f;
      const std::vector<int> node{1};
      const std::vector<const float*> self{q[0].data()};
      const std::vector<float> self_w{0.5f};
      const std::vector<int> first{0, 2};
      const std::vector<const float*> in{q[1].data(), q[2].data()};
      const std::vector<float> in_w{0.3f, 0.2f};
      std::vector<float> models(2 * kP, -9.0f), s_dev = s0;
      std::vector<float> half_rows = half, xhat_rows = xhat;
      MixBatch batch{node.data(), self.data(), self_w.data(), first.data(), in.data(), in_w.data()};
      batch.choco = true;
      batch.choco_rows = {half_rows.data(), xhat_rows.data(), s_dev.data(), gamma,
                          adapt_then_combine};
      each_tile_on_host<4>(kP, [&](std::size_t e0, std::size_t stride) {
        mix_tile<4>(batch, models.data(), nullptr, kP, 0, e0, stride);
      });
      // The host: GossipProtocol::mix's weighted sum, then ChocoSgd::consensus.
      std::vector<float> mixed(kP), s_host(s0.begin() + kP, s0.end()), x_host(kP);
      weighted_sum(
          self_w[0], q[0].data(), in_w, [&](std::size_t c) { return in[c]; }, kP, mixed.data());
      ChocoSgd::consensus(adapt_then_combine, gamma, mixed, s_host,
                          std::span<const float>(half).subspan(kP),
                          std::span<const float>(xhat).subspan(kP), x_host);
      const std::vector<float> x_dev(models.begin() + kP, models.end());
      CHECK(relative_error(x_dev, x_host) < 1e-6);
      CHECK(relative_error(std::vector<float>(s_dev.begin() + kP, s_dev.end()), s_host) < 1e-6);
      CHECK(std::equal(s_dev.begin(), s_dev.begin() + kP, s0.begin())); // node 0 untouched
      CHECK(std::all_of(models.begin(), models.begin() + kP, [](float v) { return v == -9.0f; }));
    }
  }

  TEST_CASE("Resident math: the device's counter-based uniforms are fill_uniforms' grid") {
    // Each element's uniform is a function of (seed, step, element): the same again, on the
    // grid of 2^16 midpoints, about uniform, and another for another step, node or element.
    constexpr std::size_t kDraws = 1 << 16;
    double sum = 0;
    std::set<float> seen;
    for (std::size_t e = 0; e < kDraws; ++e) {
      const float u = counter_uniform(7, 3, e);
      CHECK(u == counter_uniform(7, 3, e));
      const float scaled = u * 65536.0f - 0.5f;
      REQUIRE(scaled == std::floor(scaled));
      REQUIRE((u > 0.0f && u < 1.0f));
      sum += static_cast<double>(u);
      seen.insert(u);
    }
    CHECK(sum / kDraws == doctest::Approx(0.5).epsilon(0.01));
    CHECK(seen.size() > kDraws / 2); // 2^16 values drawn from 2^16: about 63% distinct
    int same_step = 0, same_seed = 0;
    for (std::size_t e = 0; e < 1000; ++e) {
      same_step += counter_uniform(7, 4, e) == counter_uniform(7, 3, e) ? 1 : 0;
      same_seed += counter_uniform(8, 3, e) == counter_uniform(7, 3, e) ? 1 : 0;
    }
    CHECK(same_step < 10);
    CHECK(same_seed < 10);
  }
}
