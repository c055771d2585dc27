// SPDX-License-Identifier: MIT
// Compressors: unbiasedness, exact encoded sizes, lattice decoding inside and outside its
// radius, top-k/sign/fp16 values, error feedback, factory errors.
#include "sim/core/flat_vector.hpp"
#include "sim/optimizers/compression/compressor.hpp"
#include "sim/optimizers/compression/error_feedback.hpp"
#include "sim/optimizers/compression/lattice_quantizer.hpp"
#include "support/config_error.hpp"
#include "support/params_helper.hpp"

#include <cmath>
#include <doctest/doctest.h>
#include <memory>
#include <vector>

using namespace dtsim;
using dtsim::testing::config_error_of;
using dtsim::testing::make_params;

namespace {

std::unique_ptr<Compressor> make(std::initializer_list<std::pair<const char*, std::string>> kv,
                                 std::size_t dim, bool contractive = false) {
  CompressorSetup s{dim};
  s.contractive = contractive;
  return make_compressor(make_params(kv), s, "none");
}

Vec random_vector(std::size_t d, std::uint64_t seed) {
  Rng rng(seed);
  Vec v(static_cast<Eigen::Index>(d));
  for (Eigen::Index i = 0; i < v.size(); ++i)
    v[i] = static_cast<float>(rng.normal());
  return v;
}

std::span<const float> view(const Vec& v) {
  return {v.data(), static_cast<std::size_t>(v.size())};
}
std::span<float> span(Vec& v) {
  return {v.data(), static_cast<std::size_t>(v.size())};
}

// Mean of `draws` encodings of x, each with its own seed.
Vec mean_of_draws(Compressor& c, const Vec& x, int draws) {
  Vec sum = Vec::Zero(x.size()), wire(x.size());
  for (int t = 0; t < draws; ++t) {
    Rng rng(1000 + static_cast<std::uint64_t>(t));
    c.encode(view(x), span(wire), rng);
    sum += wire;
  }
  return sum / static_cast<float>(draws);
}

} // namespace

TEST_SUITE("compression") {
  TEST_CASE("qsgd is unbiased: the mean over many seeds is x, per coordinate") {
    // 37 coordinates in buckets of 8: four full buckets and a partial one.
    const Vec x = random_vector(37, 7);
    auto c = make({{"kind", "qsgd"}, {"bits", "2"}, {"bucket", "8"}}, 37);
    const int draws = 20000;
    const Vec mean = mean_of_draws(*c, x, draws);
    for (Eigen::Index b = 0; b < 37; b += 8) {
      const Eigen::Index len = std::min<Eigen::Index>(8, 37 - b);
      const float unit = x.segment(b, len).norm() / 3.0f; // one level, s = 2^2 - 1
      for (Eigen::Index k = b; k < b + len; ++k) {
        CAPTURE(k);
        // Each draw is one of two adjacent levels: sd <= unit/2; 5 sd of the mean.
        CHECK(std::fabs(mean[k] - x[k]) <= 5.0f * 0.5f * unit / std::sqrt(float(draws)));
      }
    }
    // A biased quantizer fails the same check: the contractive form is Q / tau.
    auto scaled = make({{"kind", "qsgd"}, {"bits", "2"}, {"bucket", "8"}}, 37, true);
    const Vec smean = mean_of_draws(*scaled, x, 2000);
    const double tau = 1.0 + std::min(8.0 / 9.0, std::sqrt(8.0) / 3.0);
    CHECK(smean[0] == doctest::Approx(static_cast<double>(x[0]) / tau).epsilon(0.05));
    CHECK(std::fabs(smean[0] - x[0]) > 0.1f * std::fabs(x[0]));
  }

  TEST_CASE("randomk is unbiased with scaling d/k and keeps exactly k coordinates") {
    const std::size_t d = 20;
    const Vec x = random_vector(d, 9);
    auto c = make({{"kind", "randomk"}, {"ratio", "0.2"}}, d); // k = 4
    Vec wire(static_cast<Eigen::Index>(d));
    Rng rng(5);
    c->encode(view(x), span(wire), rng);
    CHECK((wire.array() != 0.0f).count() == 4);
    const int draws = 20000;
    const Vec mean = mean_of_draws(*c, x, draws);
    for (std::size_t k = 0; k < d; ++k) {
      CAPTURE(k);
      const float xk = x[static_cast<Eigen::Index>(k)];
      const float sd = std::fabs(xk) * std::sqrt(5.0f - 1.0f); // d/k = 5
      CHECK(std::fabs(mean[static_cast<Eigen::Index>(k)] - xk) <=
            5.0f * sd / std::sqrt(float(draws)));
    }
    // The contractive form keeps values unscaled (biased toward 0 by k/d on average).
    auto plain = make({{"kind", "randomk"}, {"ratio", "0.2"}}, d, true);
    plain->encode(view(x), span(wire), rng);
    for (Eigen::Index k = 0; k < wire.size(); ++k)
      CHECK((wire[k] == 0.0f || wire[k] == x[k]));
  }

  TEST_CASE("Exact encoded sizes of every compressor") {
    auto bytes = [](std::initializer_list<std::pair<const char*, std::string>> kv,
                    std::size_t dim) { return make(kv, dim)->encoded_bytes(dim); };
    CHECK(bytes({{"kind", "none"}}, 1000) == 4000);
    CHECK(bytes({{"kind", "fp16"}}, 1001) == 2002);
    // 2 buckets of norms (8 bytes) + 1000 * (4 + 1) bits = 625 bytes.
    CHECK(bytes({{"kind", "qsgd"}, {"bits", "4"}, {"bucket", "512"}}, 1000) == 633);
    // One norm + ceil(101770 * 5 / 8) = 63607 bytes.
    CHECK(bytes({{"kind", "qsgd"}, {"bits", "4"}, {"bucket", "0"}}, 101770) == 4 + 63607);
    // 199 bucket norms (the last bucket partial) + ceil(101770 * 9 / 8) = 114492.
    CHECK(bytes({{"kind", "qsgd"}, {"bits", "8"}}, 101770) == 4 * 199 + 114492);
    // Top 1% of 101770 = 1018 (index, value) pairs.
    CHECK(bytes({{"kind", "topk"}, {"ratio", "0.01"}}, 101770) == 8 * 1018);
    CHECK(bytes({{"kind", "topk"}, {"ratio", "1"}}, 3) == 24);
    CHECK(bytes({{"kind", "randomk"}, {"ratio", "0.01"}}, 101770) == 8 + 4 * 1018);
    CHECK(bytes({{"kind", "sign"}}, 1001) == 4 + 126);
    CHECK(bytes({{"kind", "lattice"}, {"bits", "8"}}, 1001) == 1001);
    CHECK(bytes({{"kind", "lattice"}, {"bits", "4"}}, 1001) == 501);
    CHECK(bytes({{"kind", "lattice"}, {"bits", "3"}}, 1001) == 376);
    CHECK(bytes({{"kind", "qsgd"}, {"bits", "4"}, {"error_feedback", "true"}}, 1000) == 633);
  }

  TEST_CASE("Lattice: decodes exactly within its radius, and counts failures outside it") {
    const double side = 1e-3;
    LatticeQuantizer lq(4, side, false); // q = 16: radius 8 * side
    CHECK(lq.radius() == doctest::Approx(8 * side));
    const std::size_t d = 200;
    const Vec x = random_vector(d, 11) * 0.5f;
    Vec wire(static_cast<Eigen::Index>(d)), out(static_cast<Eigen::Index>(d));
    Rng rng(1);
    lq.encode(view(x), span(wire), rng);

    // A reference within radius - side/2 of every coordinate: exact lattice values.
    Rng r2(2);
    Vec ref(static_cast<Eigen::Index>(d));
    for (Eigen::Index i = 0; i < ref.size(); ++i)
      ref[i] = x[i] + static_cast<float>(r2.uniform(-7.4, 7.4) * side);
    CHECK(lq.decode(view(wire), view(ref), span(out)) == 0);
    for (Eigen::Index i = 0; i < out.size(); ++i) {
      CAPTURE(i);
      CHECK(out[i] ==
            static_cast<float>(std::nearbyint(double(x[i]) / side)) * static_cast<float>(side));
      CHECK(std::fabs(out[i] - x[i]) <= 0.5 * side + 1e-7);
    }
    // The sender's own view (no decoding) is what every successful decode gives.
    Vec own(static_cast<Eigen::Index>(d));
    lq.own_view(view(wire), view(x), span(own));
    CHECK(own == out);
    // Move 30 coordinates of the reference beyond the radius: exactly those fail, each off
    // by a whole number of periods q * side.
    for (Eigen::Index i = 0; i < 30; ++i)
      ref[i] = x[i] + static_cast<float>((i % 2 ? 9.0 : -12.5) * side);
    CHECK(lq.decode(view(wire), view(ref), span(out)) == 30);
    for (Eigen::Index i = 0; i < 30; ++i) {
      const double periods =
          (double(out[i]) - std::nearbyint(double(x[i]) / side) * side) / (16 * side);
      CHECK(std::fabs(periods) >= 0.99);
      CHECK(std::fabs(periods - std::nearbyint(periods)) < 1e-3);
    }
  }

  TEST_CASE("Lattice: stochastic rounding is unbiased") {
    LatticeQuantizer lq(8, 0.1, true);
    Vec x(3), wire(3), out(3), sum = Vec::Zero(3);
    x << 0.0137f, -0.2549f, 0.33f;
    for (int t = 0; t < 20000; ++t) {
      Rng rng(static_cast<std::uint64_t>(t));
      lq.encode(view(x), span(wire), rng);
      CHECK(lq.decode(view(wire), view(x), span(out)) == 0);
      sum += out;
    }
    const Vec mean = sum / 20000.0f;
    // sd of one draw <= side/2 = 0.05; 5 sd of the mean of 20000 is 1.8e-3. Nearest rounding
    // would be off by up to side/2 (0.0137 -> 0).
    for (Eigen::Index i = 0; i < 3; ++i)
      CHECK(std::fabs(mean[i] - x[i]) < 1.8e-3f);
  }

  TEST_CASE(
      "Top-k keeps the largest magnitudes with ties to the lower index, and sign and fp16 values") {
    Vec x(6), wire(6);
    x << 0.5f, -3.0f, 2.0f, -2.0f, 0.1f, 2.0f;
    Rng rng(1);
    auto topk = make({{"kind", "topk"}, {"ratio", "0.5"}}, 6); // k = 3
    const EncodeStats st = topk->encode(view(x), span(wire), rng);
    Vec expect(6);
    expect << 0, -3.0f, 2.0f, -2.0f, 0, 0;
    CHECK(wire == expect);
    CHECK(st.error_sq == doctest::Approx(0.25 + 0.01 + 4.0));

    auto sign = make({{"kind", "sign"}}, 6);
    sign->encode(view(x), span(wire), rng);
    const float m = (0.5f + 3 + 2 + 2 + 0.1f + 2) / 6;
    expect << m, -m, m, -m, m, m;
    CHECK((wire - expect).cwiseAbs().maxCoeff() < 1e-6f);

    auto half = make({{"kind", "fp16"}}, 6);
    Vec y(6);
    y << 1.0f, 0.5f, -2.25f, 1.0f / 3.0f, 70000.0f, 1e-8f;
    half->encode(view(y), span(wire), rng);
    CHECK(wire[0] == 1.0f);
    CHECK(wire[2] == -2.25f);
    CHECK(wire[3] == doctest::Approx(1.0 / 3.0).epsilon(1e-3));
    CHECK(std::isinf(wire[4]));
    CHECK(wire[5] == 0.0f);
  }

  TEST_CASE("Error feedback: what the messages left out is exactly the memory") {
    const std::size_t d = 50;
    auto inner = make({{"kind", "topk"}, {"ratio", "0.1"}}, d);
    ErrorFeedback ef(std::move(inner), d);
    Vec sent = Vec::Zero(static_cast<Eigen::Index>(d)), input = sent;
    Vec wire(static_cast<Eigen::Index>(d));
    Rng rng(3);
    for (int t = 0; t < 40; ++t) {
      const Vec x = random_vector(d, 100 + static_cast<std::uint64_t>(t));
      ef.encode(view(x), span(wire), rng);
      sent += wire;
      input += x;
    }
    // sum Q(v_t) = sum x_t - e_T (telescoping): nothing is lost, only delayed.
    const Vec e = as_vec(ef.memory());
    CHECK((input - sent - e).cwiseAbs().maxCoeff() < 1e-4f);
    CHECK(e.norm() > 0);
  }

  TEST_CASE("Compressor factory: unknown kinds, refused combinations, ranges") {
    CompressorSetup s{10};
    CHECK(config_error_of([&] {
            make_compressor(make_params({{"kind", "qsdg"}}), s, "none");
          }).find("did you mean 'qsgd'") != std::string::npos);
    CompressorSetup choco{10};
    choco.allow_reference = false;
    choco.allow_error_feedback = false;
    CHECK(config_error_of([&] {
            make_compressor(make_params({{"kind", "lattice"}}), choco, "none");
          }).find("lattice") != std::string::npos);
    const std::string ef = config_error_of([&] {
      make_compressor(make_params({{"kind", "sign"}, {"error_feedback", "true"}}), choco, "none");
    });
    CHECK(ef.find("test.yaml:3: error_feedback") != std::string::npos);
    CHECK(config_error_of([&] {
            make_compressor(make_params({{"kind", "qsgd"}, {"bits", "0"}}), s, "none");
          }).find("bits") != std::string::npos);
    CHECK(config_error_of([&] {
            make_compressor(make_params({{"kind", "topk"}, {"ratio", "0"}}), s, "none");
          }).find("ratio") != std::string::npos);
  }

  TEST_CASE("Same seed, same encoding") {
    const Vec x = random_vector(300, 4);
    auto c = make({{"kind", "qsgd"}, {"bits", "3"}}, 300);
    Vec a(300), b(300);
    Rng r1(9), r2(9);
    c->encode(view(x), span(a), r1);
    c->encode(view(x), span(b), r2);
    CHECK(a == b);
  }
}
