// SPDX-License-Identifier: MIT
// Seeded random streams, one per (seed, purpose, node), with our own distributions.
#pragma once

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

  std::uint64_t next_u64();
  double uniform();                     // [0, 1), 53 random bits
  double uniform(double lo, double hi); // [lo, hi)
  std::uint64_t below(std::uint64_t n); // uniform in [0, n), unbiased; requires n > 0
  double normal();                      // N(0, 1), Marsaglia polar method
  double exponential(double mean);      // requires mean > 0
  double gamma(double shape);           // Gamma(shape, 1), Marsaglia-Tsang; shape > 0
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
  std::uint64_t s_[4];
  double spare_normal_ = 0.0;
  bool has_spare_ = false;
};

} // namespace dtsim
