// SPDX-License-Identifier: MIT
// A method's per-node state vectors, each made (zero) when its node first takes it.
#pragma once

#include "sim/core/errors.hpp"
#include "sim/core/flat_vector.hpp"

#include <cstddef>
#include <span>
#include <vector>

namespace dtsim {

// One vector of `dim` floats per node, zero until the node first takes it. A node's step
// takes only its own vector, so steps of different nodes may run at once; nothing is
// allocated after a node's first step. Made at construction instead, a method whose
// resident backend keeps this state (attach_resident, which calls release()) would fill n
// host vectors only to drop them: at 1,024 nodes of the 0.94 MB MLP, about 1 GB each and a
// third of a second of page faults before the run.
class NodeVectors {
public:
  NodeVectors() = default;
  NodeVectors(int nodes, std::size_t dim) : dim_(dim), v_(static_cast<std::size_t>(nodes)) {}

  Vec& operator[](std::size_t node) {
    DTSIM_ASSERT(node < v_.size(), "NodeVectors: no such node, or the vectors were released");
    Vec& v = v_[node];
    if (v.size() == 0)
      v = Vec::Zero(static_cast<Eigen::Index>(dim_));
    return v;
  }
  std::span<float> span(std::size_t node) { return {(*this)[node].data(), dim_}; }
  std::size_t size() const { return v_.size(); } // nodes; 0 once released
  // What the vectors hold once every node has taken its own (a trace's header states it at
  // the start); 0 once released.
  std::size_t bytes() const { return v_.size() * dim_ * sizeof(float); }
  void release() { std::vector<Vec>().swap(v_); }

private:
  std::size_t dim_ = 0;
  std::vector<Vec> v_; // per node: empty until taken
};

} // namespace dtsim
