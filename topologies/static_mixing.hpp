// SPDX-License-Identifier: MIT
// The mixing schedule of a static topology: its W in every round.
#pragma once

#include "topologies/mixing_schedule.hpp"

namespace dtsim {

// W(r) = topology.mixing_matrix() for every r; in = out = the neighbour list.
class StaticMixing final : public MixingSchedule {
public:
  explicit StaticMixing(const Topology& topology) : topology_(topology) {}
  std::string name() const override { return topology_.name(); }
  int size() const override { return topology_.size(); }
  bool time_varying() const override { return false; }
  int max_degree() const override { return topology_.max_degree(); }
  std::int64_t period() const override { return 1; }
  RoundMixing at(std::int64_t, int node) const override {
    return {topology_.self_weight(node), topology_.neighbors(node), topology_.weights(node),
            topology_.neighbors(node)};
  }

private:
  const Topology& topology_;
};

} // namespace dtsim
