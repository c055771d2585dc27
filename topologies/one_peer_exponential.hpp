// SPDX-License-Identifier: MIT
// One-peer exponential graph: each round every node averages with one peer 2^k hops away.
#pragma once

#include "topologies/mixing_schedule.hpp"

#include <vector>

namespace dtsim {

// Ying, Yuan, Chen, Hu, Pan, Yin (NeurIPS 2021, arXiv:2110.13363): with tau = ceil(log2 n)
// and k = r mod tau, round r's matrix has W_ii = W_i,(i+2^k mod n) = 1/2. Node i receives
// from i + 2^k and sends to i - 2^k (mod n): directed, doubly stochastic, one message per node
// per round. For n a power of two the product of any tau consecutive matrices is exactly
// 11^T/n, i.e. tau rounds give the exact average. n = 1: W = [1].
class OnePeerExponential final : public MixingSchedule {
public:
  explicit OnePeerExponential(int nodes);
  std::string name() const override { return "one_peer_exponential"; }
  int size() const override { return nodes_; }
  bool time_varying() const override { return tau_ > 1; }
  int max_degree() const override { return nodes_ > 1 ? 1 : 0; }
  std::int64_t period() const override { return tau_ > 0 ? tau_ : 1; }
  RoundMixing at(std::int64_t round, int node) const override;

private:
  int nodes_;
  int tau_;
  std::vector<int> in_;  // in_[k * n + i] = (i + 2^k) mod n
  std::vector<int> out_; // out_[k * n + i] = (i - 2^k) mod n
  double half_ = 0.5;
};

} // namespace dtsim
