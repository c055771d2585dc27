// SPDX-License-Identifier: MIT
// Random pairs schedule: seeded matchings per round, recomputed on a cache miss.
#include "topologies/random_pairs.hpp"

#include "sim/core/errors.hpp"
#include "sim/core/rng.hpp"

#include <algorithm>
#include <numeric>

namespace dtsim {
namespace {
// Nodes in a synchronous run are rarely more than a few rounds apart; a miss only costs a
// recomputation (O(n)), never a different answer.
constexpr std::size_t kCachedRounds = 8;
} // namespace

RandomPairs::RandomPairs(int nodes, std::uint64_t seed)
    : nodes_(nodes), seed_(seed), cache_(kCachedRounds), order_(static_cast<std::size_t>(nodes)) {
  DTSIM_ASSERT(nodes >= 1, "random pairs need a node");
  for (Matching& m : cache_)
    m.partner.assign(static_cast<std::size_t>(nodes), -1);
}

const RandomPairs::Matching& RandomPairs::matching(std::int64_t round) const {
  for (const Matching& m : cache_)
    if (m.round == round)
      return m;
  // Replace the oldest round.
  Matching& m =
      *std::min_element(cache_.begin(), cache_.end(),
                        [](const Matching& a, const Matching& b) { return a.round < b.round; });
  m.round = round;
  std::iota(order_.begin(), order_.end(), 0);
  Rng rng = Rng::stream(seed_, "mixing_pairs", static_cast<std::uint64_t>(round));
  rng.shuffle(order_);
  std::fill(m.partner.begin(), m.partner.end(), -1);
  for (std::size_t k = 0; k + 1 < order_.size(); k += 2) {
    m.partner[static_cast<std::size_t>(order_[k])] = order_[k + 1];
    m.partner[static_cast<std::size_t>(order_[k + 1])] = order_[k];
  }
  return m;
}

RoundMixing RandomPairs::at(std::int64_t round, int node) const {
  const Matching& m = matching(round);
  const int* p = &m.partner[static_cast<std::size_t>(node)];
  if (*p < 0)
    return {1.0, {}, {}, {}};
  return {0.5, {p, 1}, {&half_, 1}, {p, 1}};
}

} // namespace dtsim
