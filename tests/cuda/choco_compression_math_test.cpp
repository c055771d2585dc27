// SPDX-License-Identifier: MIT
// cuda-resident CHOCO-SGD's compressions of a whole difference against the host's
// compressors: each element's q (whole_compression_element, round_to_half) given the same
// inputs, and the selection of top-k and random-k as the device kernel runs it (the radix
// passes of radix_select.hpp, then the ties counted chunk by chunk and warp by warp), here on
// the host; no GPU needed.
#include "cuda/resident_math.hpp"
#include "resident_test_vectors.hpp"
#include "sim/core/flat_vector.hpp"
#include "sim/core/rng.hpp"
#include "sim/optimizers/compression/cast_compressor.hpp"
#include "sim/optimizers/compression/qsgd.hpp"
#include "sim/optimizers/compression/radix_select.hpp"
#include "sim/optimizers/compression/sign_compressor.hpp"
#include "sim/optimizers/compression/top_k.hpp"
#include "support/params_helper.hpp"

#include <algorithm>
#include <array>
#include <cmath>
#include <cstring>
#include <doctest/doctest.h>
#include <limits>
#include <vector>

using namespace dtsim;
using namespace dtsim::cuda;
using Kind = ResidentCompression::Kind;
using dtsim::test::random_vector;

namespace {

constexpr std::size_t kP = 5000; // nine chunks of 512 threads and a partial one

std::uint32_t bits_of(float x) {
  std::uint32_t b = 0;
  std::memcpy(&b, &x, sizeof b);
  return b;
}

// warp_radix_choose's steps: each of 32 lanes sums its range of bins from the top, the
// first lane whose running sum reaches the rank walks its range.
void warp_choose(RadixDigit digit, const std::uint32_t* counts, RadixSelection& sel) {
  const std::uint32_t per = (1u << digit.width) / 32;
  unsigned long long through = 0;
  for (std::uint32_t lane = 0; lane < 32; ++lane) {
    const std::uint32_t high = (32 - lane) * per, low = high - per;
    unsigned long long range = 0;
    for (std::uint32_t v = low; v < high; ++v)
      range += counts[v];
    through += range;
    if (through >= sel.rank) {
      sel.rank -= static_cast<std::size_t>(through - range);
      radix_choose_in(digit, counts, low, high, sel);
      return;
    }
  }
}

// Which of `keys` choco_whole_kernel keeps (the `keep` largest, ties to the lower index), as
// its code runs on a block of kThreads threads: choco_select's three counting passes (the
// digit chosen as its warp does), then the chunks in index order with each warp's ties
// counted as its ballot would and the warps' in warp order, every thread keeping its own
// running count.
std::vector<bool> kernel_selection(const std::vector<std::uint32_t>& keys, std::size_t keep) {
  constexpr std::size_t kThreads = 512, kWarps = kThreads / 32;
  const std::size_t P = keys.size();
  RadixSelection sel;
  sel.rank = keep;
  for (int pass = 0; pass < kRadixPasses; ++pass) {
    const RadixDigit digit = radix_digit(pass);
    std::array<std::uint32_t, kRadixBins> counts{};
    for (const std::uint32_t key : keys)
      if (radix_candidate(sel, key))
        ++counts[radix_bin(digit, key)];
    warp_choose(digit, counts.data(), sel);
  }
  const bool every_tie = sel.rank == sel.at_digit;
  std::vector<bool> kept(P, false);
  std::vector<std::size_t> ties_before(kThreads, 0); // each thread's register
  for (std::size_t first = 0; first < P; first += kThreads) {
    std::array<std::uint32_t, kThreads> ballot{}; // thread t's tie flag
    std::array<std::uint32_t, kWarps> warp_ties{};
    for (std::size_t t = 0; t < kThreads; ++t) {
      const std::size_t e = first + t;
      ballot[t] = e < P && keys[e] == sel.prefix ? 1u : 0u;
      warp_ties[t / 32] += ballot[t];
    }
    for (std::size_t t = 0; t < kThreads; ++t) {
      const std::size_t e = first + t;
      const bool valid = e < P;
      const bool tie = ballot[t] != 0;
      bool keep_it = valid && keys[e] > sel.prefix;
      if (every_tie) {
        keep_it = keep_it || tie;
      } else if (ties_before[t] < sel.rank) {
        std::size_t rank = ties_before[t];
        for (std::size_t lane = t / 32 * 32; lane < t; ++lane)
          rank += ballot[lane];
        for (std::size_t w = 0; w < kWarps; ++w) {
          if (w < t / 32)
            rank += warp_ties[w];
          ties_before[t] += warp_ties[w];
        }
        keep_it = keep_it || (tie && rank < sel.rank);
      }
      if (valid)
        kept[e] = keep_it;
    }
  }
  return kept;
}

// Differences with many ties: zeros, a few repeated values and both signs, a NaN.
std::vector<float> tied_vector(Rng& rng, std::size_t n) {
  std::vector<float> v(n);
  for (float& x : v) {
    const auto pick = rng.below(10);
    x = pick < 4   ? 0.0f
        : pick < 7 ? (pick % 2 ? 0.5f : -0.5f)
                   : static_cast<float>(rng.uniform(-1, 1));
  }
  v[17] = std::nanf("");
  return v;
}

} // namespace

TEST_SUITE("cuda") {
  TEST_CASE("Resident math: round_to_half is the fp16 compressor's value, bit for bit") {
    std::vector<float> x = {0.0f,
                            -0.0f,
                            1.0f,
                            65504.0f,
                            65519.99f,
                            65520.0f,
                            -65520.0f,
                            1e30f,
                            0x1p-14f,
                            0x1p-24f,
                            0x1p-25f,
                            0x3p-25f,
                            0x1p-26f,
                            -0x1p-25f,
                            6.1e-5f,
                            1.00048828125f,
                            1.000732421875f,
                            std::numeric_limits<float>::infinity(),
                            -std::numeric_limits<float>::infinity(),
                            std::numeric_limits<float>::denorm_min()};
    Rng rng = Rng::stream(31, "test", Rng::kNoNode);
    for (int k = 0; k < 200000; ++k) { // every binade from 2^-30 to 2^17, both signs
      const double m = rng.uniform(-1.0, 1.0);
      x.push_back(static_cast<float>(std::ldexp(m, static_cast<int>(rng.below(48)) - 30)));
    }
    std::vector<float> wire(x.size());
    Rng unused = Rng::stream(32, "test", Rng::kNoNode);
    CastCompressor(true).encode(x, wire, unused);
    std::size_t differ = 0;
    for (std::size_t i = 0; i < x.size(); ++i)
      differ += bits_of(round_to_half(x[i])) == bits_of(wire[i]) ? 0 : 1;
    CHECK(differ == 0);
    CHECK(std::isnan(round_to_half(std::nanf(""))));
  }

  TEST_CASE("Resident math: the device's whole-difference forms are the host compressors'") {
    Rng rng = Rng::stream(33, "test", Rng::kNoNode);
    const std::vector<float> d = random_vector(rng, kP);
    Rng unused = Rng::stream(34, "test", Rng::kNoNode);
    std::vector<float> host(kP), dev(kP);
    SUBCASE("identity") {
      CastCompressor(false).encode(d, host, unused);
      for (std::size_t e = 0; e < kP; ++e)
        dev[e] = whole_compression_element({Kind::identity}, d[e], false, 0.0f);
      CHECK(dev == host);
    }
    SUBCASE("sign: the mean magnitude with d's sign, NaN's negative") {
      std::vector<float> v = d;
      v[3] = 0.0f;
      v[4] = -0.0f;
      SignCompressor().encode(v, host, unused);
      WholeCompression w{Kind::sign};
      w.scale = as_vec(std::span<const float>(v)).cwiseAbs().sum() / static_cast<float>(kP);
      for (std::size_t e = 0; e < kP; ++e)
        dev[e] = whole_compression_element(w, v[e], false, 0.0f);
      CHECK(dev == host);
      CHECK(whole_compression_element(w, std::nanf(""), false, 0.0f) == -w.scale);
    }
    SUBCASE("QSGD with one bucket, given Qsgd::encode's uniforms") {
      CompressorSetup setup{kP};
      setup.contractive = true;
      Qsgd qsgd(testing::make_params({{"bits", "4"}, {"bucket", "0"}}), setup);
      Rng stream = Rng::stream(35, "test", Rng::kNoNode);
      Rng draws = stream;
      qsgd.encode(d, host, stream);
      std::vector<float> u(kP);
      fill_uniforms(draws, u);
      WholeCompression w{Kind::qsgd};
      w.qsgd = qsgd_bucket(Qsgd::bucket_norm(d), kP, 4, true);
      for (std::size_t e = 0; e < kP; ++e)
        dev[e] = whole_compression_element(w, d[e], false, u[e]);
      CHECK(dev == host);
    }
    SUBCASE("top-k and random-k: the kept values, scaled or not") {
      WholeCompression top{Kind::top_k}, random{Kind::random_k};
      random.scale = 4.0f;
      CHECK(whole_compression_element(top, -0.25f, true, 0.0f) == -0.25f);
      CHECK(whole_compression_element(top, -0.25f, false, 0.0f) == 0.0f);
      CHECK(whole_compression_element(random, -0.25f, true, 0.0f) == -1.0f);
      CHECK(whole_compression_element(random, -0.25f, false, 0.0f) == 0.0f);
    }
  }

  TEST_CASE("Resident math: the kernel's top-k selection keeps TopK::encode's coordinates") {
    Rng rng = Rng::stream(36, "test", Rng::kNoNode);
    for (const bool ties : {false, true}) {
      const std::vector<float> d = ties ? tied_vector(rng, kP) : random_vector(rng, kP);
      for (const double ratio : {0.001, 0.01, 0.25, 0.5, 0.9, 1.0}) {
        CAPTURE(ties);
        CAPTURE(ratio);
        TopK topk(testing::make_params({{"ratio", std::to_string(ratio)}}), CompressorSetup{kP});
        std::vector<float> host(kP);
        Rng unused = Rng::stream(37, "test", Rng::kNoNode);
        topk.encode(d, host, unused);
        std::vector<std::uint32_t> keys(kP);
        std::transform(d.begin(), d.end(), keys.begin(), magnitude_key);
        const std::size_t keep = TopK::count(ratio, kP);
        const std::vector<bool> kept = kernel_selection(keys, keep);
        CHECK(static_cast<std::size_t>(std::count(kept.begin(), kept.end(), true)) == keep);
        std::size_t differ = 0;
        for (std::size_t e = 0; e < kP; ++e) {
          const float q = whole_compression_element({Kind::top_k}, d[e], kept[e], 0.0f);
          differ += bits_of(q) == bits_of(host[e]) ? 0 : 1;
        }
        CHECK(differ == 0);
      }
    }
  }

  TEST_CASE("Resident math: random-k's device keys draw keep distinct coordinates uniformly") {
    // The keep largest counter keys of a step: exactly keep coordinates, the same for the
    // same (seed, step), and over many steps each coordinate about keep / P of the time.
    constexpr std::size_t kSmallP = 1000, kKeep = 100, kSteps = 2000;
    std::vector<int> picked(kSmallP, 0);
    for (std::uint64_t step = 0; step < kSteps; ++step) {
      std::vector<std::uint32_t> keys(kSmallP);
      for (std::size_t e = 0; e < kSmallP; ++e)
        keys[e] = counter_key(11, step, e);
      const std::vector<bool> kept = kernel_selection(keys, kKeep);
      REQUIRE(static_cast<std::size_t>(std::count(kept.begin(), kept.end(), true)) == kKeep);
      for (std::size_t e = 0; e < kSmallP; ++e)
        picked[e] += kept[e] ? 1 : 0;
      if (step == 0) {
        for (std::size_t e = 0; e < kSmallP; ++e)
          keys[e] = counter_key(11, step, e);
        CHECK(kernel_selection(keys, kKeep) == kept);
      }
    }
    // Each count is Binomial(2000, 0.1): mean 200, sd 13.4; none beyond 6 sd.
    const auto [low, high] = std::minmax_element(picked.begin(), picked.end());
    CHECK(*low > 200 - 80);
    CHECK(*high < 200 + 80);
    int same_seed = 0;
    for (std::size_t e = 0; e < kSmallP; ++e)
      same_seed += counter_key(12, 0, e) == counter_key(11, 0, e) ? 1 : 0;
    CHECK(same_seed < 3);
  }
}
