// SPDX-License-Identifier: MIT
// Building gossip algorithms by name on a small graph, for the optimizer tests.
#pragma once

#include "sim/core/params.hpp"
#include "sim/optimizers/algorithm_setup.hpp"
#include "support/params_helper.hpp"
#include "topologies/make_topology.hpp"

#include <memory>
#include <string>
#include <utility>
#include <vector>

namespace dtsim::testing {

inline Topology graph(const std::string& kind, int nodes) {
  return make_topology(make_params({{"kind", kind}}), nodes, 1);
}

inline AlgorithmSetup setup_for(const Topology& t, std::size_t dim,
                                const MixingSchedule* mixing = nullptr) {
  AlgorithmSetup s{t.size(), dim, &t};
  s.mixing = mixing;
  return s;
}

// `algorithm.name: name` plus the given keys (all on one flat map).
using Keys = std::vector<std::pair<std::string, std::string>>;

inline std::unique_ptr<Algorithm>
make_algorithm(const std::string& name, const AlgorithmSetup& setup, const Keys& keys = {}) {
  auto root = std::make_shared<ParamNode>(ParamNode::make_map(1));
  root->fields.emplace_back("name", ParamNode::make_scalar(name, 2));
  int line = 3;
  for (const auto& [k, v] : keys)
    root->fields.emplace_back(k, ParamNode::make_scalar(v, line++));
  const Params p(root, "test.yaml");
  auto alg = algorithm_registry().make(p, "name", "dsgd", setup);
  p.reject_unused();
  return alg;
}

} // namespace dtsim::testing
