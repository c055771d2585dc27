// SPDX-License-Identifier: MIT
// The Davis Southern Women attendance graph: the 32-node "social network" of the QG papers.
#pragma once

#include <utility>
#include <vector>

namespace dtsim {

// Davis, Gardner & Gardner, "Deep South" (1941): 18 women (nodes 0..17) and the 14 social
// events they attended (nodes 18..31, E1..E14), one edge per attendance: a connected
// bipartite graph with 89 edges, in the node order of networkx.davis_southern_women_graph(),
// which the QG-DSGDm code (Lin et al., ICML 2021) uses as its n = 32 "social" topology.
constexpr int kDavisSouthernWomenNodes = 32;
std::vector<std::pair<int, int>> davis_southern_women_edges();

} // namespace dtsim
