// SPDX-License-Identifier: MIT
// Builds the topology a scenario's `topology:` section names.
#pragma once

#include "sim/core/params.hpp"
#include "topologies/topology.hpp"

#include <cstdint>
#include <string>
#include <utility>
#include <vector>

namespace dtsim {

// Reads `topology:` (kind: ring | torus | complete | star | erdos_renyi | hypercube |
// exponential | social (the 32-node Davis Southern Women graph) | edges (file: one "i j" per
// line) | one_peer_exponential | random_pairs (the union graph of these time-varying kinds;
// their rounds: make_mixing_schedule), their keys, and
// mixing: metropolis | uniform) for `nodes` nodes; random graphs use the stream
// ("topology", no node) of `seed`. Throws ConfigError for a disconnected graph (never
// silently repairs it), impossible sizes (a torus that is not rows x cols) or bad keys.
Topology make_topology(const Params& topology, int nodes, std::uint64_t seed);

// Names and one-line help of the topology kinds, for `dtsim list`.
std::vector<std::pair<std::string, std::string>> topology_kinds();

} // namespace dtsim
