// SPDX-License-Identifier: MIT
// Round-by-round mixing weights for gossip: one matrix for every round, or a time-varying one.
#pragma once

#include "sim/core/params.hpp"
#include "topologies/topology.hpp"

#include <Eigen/Core>
#include <cstdint>
#include <memory>
#include <span>
#include <string>

namespace dtsim {

// Row i of round r's mixing matrix W(r): node i's new value is
// self_weight * own + sum_k weights[k] * (value of in[k]); node i sends its round-r message
// to every node in `out` (the nodes whose row has a weight on i). Lists are sorted.
struct RoundMixing {
  double self_weight = 1.0;
  std::span<const int> in;
  std::span<const double> weights; // one per entry of `in`
  std::span<const int> out;
};

// The mixing matrices W(0), W(1), ... of a gossip run. Every W(r) is doubly stochastic, so
// mixing preserves the network average; W(r) may be directed (in != out), as in the one-peer
// exponential graph. A static topology is the same matrix every round.
// Queried on the engine thread only: the spans of at() stay valid until the next call.
class MixingSchedule {
public:
  virtual ~MixingSchedule() = default;
  virtual std::string name() const = 0;
  virtual int size() const = 0;
  virtual bool time_varying() const = 0;
  // The largest in() or out() list over all rounds and nodes (for preallocation).
  virtual int max_degree() const = 0;
  // Rounds after which the matrices repeat (1 = static, 0 = never, e.g. random).
  virtual std::int64_t period() const = 0;
  virtual RoundMixing at(std::int64_t round, int node) const = 0;

  // The dense n x n matrix of one round (tests, `dtsim topology`).
  Eigen::MatrixXd matrix(std::int64_t round) const;
};

// The schedule a scenario's `topology:` section asks for: the time-varying kinds
// (one_peer_exponential, random_pairs) get their own schedule, every other kind mixes with
// `topology`'s W in every round (the returned object then refers to `topology`). Random
// schedules draw round r from the stream ("mixing_pairs", r) of `seed`.
std::unique_ptr<MixingSchedule> make_mixing_schedule(const Params& topology_params,
                                                     const Topology& topology, std::uint64_t seed);

} // namespace dtsim
