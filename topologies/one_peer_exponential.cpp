// SPDX-License-Identifier: MIT
// One-peer exponential schedule: peer tables for the tau distinct rounds.
#include "topologies/one_peer_exponential.hpp"

#include "sim/core/errors.hpp"

namespace dtsim {

OnePeerExponential::OnePeerExponential(int nodes) : nodes_(nodes), tau_(0) {
  DTSIM_ASSERT(nodes >= 1, "one-peer exponential graph needs a node");
  while ((std::int64_t{1} << tau_) < nodes)
    ++tau_;
  in_.resize(static_cast<std::size_t>(tau_) * static_cast<std::size_t>(nodes));
  out_.resize(in_.size());
  for (int k = 0; k < tau_; ++k) {
    const int hop = 1 << k;
    for (int i = 0; i < nodes; ++i) {
      const auto at = static_cast<std::size_t>(k) * static_cast<std::size_t>(nodes) +
                      static_cast<std::size_t>(i);
      in_[at] = (i + hop) % nodes;
      out_[at] = ((i - hop) % nodes + nodes) % nodes;
    }
  }
}

RoundMixing OnePeerExponential::at(std::int64_t round, int node) const {
  if (tau_ == 0)
    return {1.0, {}, {}, {}};
  const auto k = static_cast<std::size_t>(round % tau_);
  const std::size_t at = k * static_cast<std::size_t>(nodes_) + static_cast<std::size_t>(node);
  return {0.5, {&in_[at], 1}, {&half_, 1}, {&out_[at], 1}};
}

} // namespace dtsim
