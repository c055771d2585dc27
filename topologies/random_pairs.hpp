// SPDX-License-Identifier: MIT
// Random pairs: each round a fresh seeded random perfect matching; partners average.
#pragma once

#include "topologies/mixing_schedule.hpp"

#include <cstdint>
#include <vector>

namespace dtsim {

// Round r shuffles the nodes with the stream ("mixing_pairs", r) of the seed and pairs
// positions (0,1), (2,3), ...; partners mix with weight 1/2 each (symmetric, doubly
// stochastic). With an odd n the last node of the shuffle sits the round out (W_ii = 1).
// Round r's matching depends only on (seed, r), so any query order gives the same rounds;
// the last few matchings are cached.
class RandomPairs final : public MixingSchedule {
public:
  RandomPairs(int nodes, std::uint64_t seed);
  std::string name() const override { return "random_pairs"; }
  int size() const override { return nodes_; }
  bool time_varying() const override { return nodes_ > 2; }
  int max_degree() const override { return nodes_ > 1 ? 1 : 0; }
  std::int64_t period() const override { return nodes_ > 2 ? 0 : 1; }
  RoundMixing at(std::int64_t round, int node) const override;

private:
  struct Matching {
    std::int64_t round = -1;
    std::vector<int> partner; // -1: no partner this round
  };
  const Matching& matching(std::int64_t round) const;

  int nodes_;
  std::uint64_t seed_;
  double half_ = 0.5;
  mutable std::vector<Matching> cache_;
  mutable std::vector<int> order_;
};

} // namespace dtsim
