// SPDX-License-Identifier: MIT
// The sign-balancing steps of GraB (stale mean) and PairBalance, on flat gradient vectors.
#pragma once

#include "sim/core/flat_vector.hpp"

#include <cstddef>
#include <span>

namespace dtsim {

// GraB's online mean balancing (Lu, Guo, De Sa, arXiv:2205.10733; docs/algorithms.md, section 7):
//   c = g - mbar;  mnext += g / N;  <s, c> <= 0 ? (s += c, front) : (s -= c, back)
// with the stale mean mbar of the previous epoch (0 in the first). Memory: 3 d-vectors.
class MeanBalancer {
public:
  MeanBalancer(std::size_t dim, std::size_t epoch_size);
  // One example's gradient, in the current order: true if it goes to the front.
  bool step(std::span<const float> g);
  // mbar = mnext; mnext = 0; s = 0.
  void end_epoch();
  std::span<const float> running_sum() const { return {s_.data(), dim()}; }
  std::size_t state_bytes() const { return sizeof(float) * 4 * dim(); }

private:
  std::size_t dim() const { return static_cast<std::size_t>(s_.size()); }
  Vec s_, mbar_, mnext_, c_;
  float inv_n_;
};

// PairBalance (docs/algorithms.md, section 7) and the CD-GraB coordinator's step
// (docs/algorithms.md, section 7): a running sum of pair differences; the difference of a pair
// cancels the mean, so no stale mean is kept.
class PairBalancer {
public:
  explicit PairBalancer(std::size_t dim);
  // dlt = g_first - g_second; <s, dlt> <= 0 ? (s += dlt, first to the front) : (s -= dlt,
  // second to the front). Returns true when the first goes to the front.
  bool step(std::span<const float> g_first, std::span<const float> g_second);
  // The same decision on a difference computed elsewhere.
  bool step_difference(std::span<const float> dlt);
  void reset() { s_.setZero(); }
  std::span<const float> running_sum() const {
    return {s_.data(), static_cast<std::size_t>(s_.size())};
  }
  std::size_t state_bytes() const {
    return sizeof(float) * 2 * static_cast<std::size_t>(s_.size());
  }

private:
  Vec s_, dlt_;
};

} // namespace dtsim
