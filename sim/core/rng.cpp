// SPDX-License-Identifier: MIT
// xoshiro256** and the distributions dtsim needs.
#include "sim/core/rng.hpp"

#include "sim/core/errors.hpp"

#include <cmath>

namespace dtsim {
namespace {

std::uint64_t splitmix64(std::uint64_t& x) {
  std::uint64_t z = (x += 0x9e3779b97f4a7c15ULL);
  z = (z ^ (z >> 30)) * 0xbf58476d1ce4e5b9ULL;
  z = (z ^ (z >> 27)) * 0x94d049bb133111ebULL;
  return z ^ (z >> 31);
}

std::uint64_t fnv1a(std::string_view s) {
  std::uint64_t h = 0xcbf29ce484222325ULL;
  for (unsigned char c : s) {
    h ^= c;
    h *= 0x100000001b3ULL;
  }
  return h;
}

} // namespace

Rng Rng::stream(std::uint64_t seed, std::string_view purpose, std::uint64_t node) {
  std::uint64_t x = seed;
  std::uint64_t a = splitmix64(x) ^ fnv1a(purpose);
  std::uint64_t b = splitmix64(a) ^ node;
  return Rng(splitmix64(b));
}

Rng::Rng(std::uint64_t seed) {
  std::uint64_t x = seed;
  for (auto& s : s_)
    s = splitmix64(x);
}

double Rng::uniform() {
  return static_cast<double>(next_u64() >> 11) * 0x1.0p-53;
}

double Rng::uniform(double lo, double hi) {
  return lo + (hi - lo) * uniform();
}

double Rng::normal() {
  if (has_spare_) {
    has_spare_ = false;
    return spare_normal_;
  }
  double u, v, s;
  do {
    u = uniform(-1.0, 1.0);
    v = uniform(-1.0, 1.0);
    s = u * u + v * v;
  } while (s >= 1.0 || s == 0.0);
  const double f = std::sqrt(-2.0 * std::log(s) / s);
  spare_normal_ = v * f;
  has_spare_ = true;
  return u * f;
}

double Rng::exponential(double mean) {
  DTSIM_ASSERT(mean > 0, "Rng::exponential needs mean > 0");
  return -mean * std::log1p(-uniform());
}

double Rng::gamma(double shape) {
  DTSIM_ASSERT(shape > 0, "Rng::gamma needs shape > 0");
  if (shape < 1.0) {
    // Boost to shape+1 and scale by U^(1/shape) (Marsaglia & Tsang, section 6).
    const double u = uniform();
    return gamma(shape + 1.0) * std::pow(u > 0 ? u : 0x1.0p-53, 1.0 / shape);
  }
  const double d = shape - 1.0 / 3.0;
  const double c = 1.0 / std::sqrt(9.0 * d);
  for (;;) {
    double x, v;
    do {
      x = normal();
      v = 1.0 + c * x;
    } while (v <= 0.0);
    v = v * v * v;
    const double u = uniform();
    if (u < 1.0 - 0.0331 * x * x * x * x)
      return d * v;
    if (std::log(u) < 0.5 * x * x + d * (1.0 - v + std::log(v)))
      return d * v;
  }
}

void Rng::dirichlet(double alpha, std::span<double> out) {
  double sum = 0.0;
  for (double& x : out) {
    x = gamma(alpha);
    sum += x;
  }
  if (sum <= 0.0) {
    // Every draw underflowed (tiny alpha): the limit is a point mass on one coordinate.
    for (double& x : out)
      x = 0.0;
    out[below(out.size())] = 1.0;
    return;
  }
  for (double& x : out)
    x /= sum;
}

bool Rng::bernoulli(double p) {
  return uniform() < p;
}

} // namespace dtsim
