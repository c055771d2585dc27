// SPDX-License-Identifier: MIT
// Seeded random streams, one per (seed, purpose, node), with our own distributions.
#pragma once

#include "sim/core/errors.hpp"

#include <cstdint>
#include <span>
#include <string_view>
#include <vector>

namespace dtsim {

// xoshiro256** generator seeded through splitmix64 (Blackman & Vigna, arXiv:1805.01407).
// Every distribution is implemented here, so a stream yields the same numbers with any
// standard library. Streams are cheap to create; never share one between purposes.
class Rng {
public:
  // The stream for one purpose ("compute", "partition", ...) of one node (or kNoNode).
  static Rng stream(std::uint64_t seed, std::string_view purpose, std::uint64_t node);
  static constexpr std::uint64_t kNoNode = ~std::uint64_t{0};

  explicit Rng(std::uint64_t seed);

  // Inline: the engine draws minibatch permutations with them at every node-step.
  std::uint64_t next_u64() {
    const std::uint64_t result = rotl(s_[1] * 5, 7) * 9;
    const std::uint64_t t = s_[1] << 17;
    s_[2] ^= s_[0];
    s_[3] ^= s_[1];
    s_[1] ^= s_[2];
    s_[0] ^= s_[3];
    s_[2] ^= t;
    s_[3] = rotl(s_[3], 45);
    return result;
  }
  double uniform();                     // [0, 1), 53 random bits
  double uniform(double lo, double hi); // [lo, hi)
  // Uniform in [0, n), unbiased; requires n > 0. Lemire's nearly-divisionless method with
  // rejection: exact uniformity.
  std::uint64_t below(std::uint64_t n) {
    DTSIM_ASSERT(n > 0, "Rng::below needs n > 0");
    U128 m = static_cast<U128>(next_u64()) * n;
    auto low = static_cast<std::uint64_t>(m);
    if (low < n) {
      const std::uint64_t threshold = (0 - n) % n;
      while (low < threshold) {
        m = static_cast<U128>(next_u64()) * n;
        low = static_cast<std::uint64_t>(m);
      }
    }
    return static_cast<std::uint64_t>(m >> 64);
  }
  double normal();                 // N(0, 1), Marsaglia polar method
  double exponential(double mean); // requires mean > 0
  double gamma(double shape);      // Gamma(shape, 1), Marsaglia-Tsang; shape > 0
  void dirichlet(double alpha, std::span<double> out); // symmetric Dir(alpha) of out.size()
  bool bernoulli(double p);

  template <class T> void shuffle(std::span<T> v) {
    for (std::size_t i = v.size(); i > 1; --i) {
      std::size_t j = below(i);
      std::swap(v[i - 1], v[j]);
    }
  }
  template <class T> void shuffle(std::vector<T>& v) { shuffle(std::span<T>(v)); }

private:
  // __extension__ keeps -Wpedantic quiet about the GCC/Clang 128-bit type.
  __extension__ typedef unsigned __int128 U128;
  static std::uint64_t rotl(std::uint64_t x, int k) { return (x << k) | (x >> (64 - k)); }
  std::uint64_t s_[4];
  double spare_normal_ = 0.0;
  bool has_spare_ = false;
};

} // namespace dtsim
