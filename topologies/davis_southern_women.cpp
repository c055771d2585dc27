// SPDX-License-Identifier: MIT
// The Davis Southern Women attendance graph, from the published attendance table.
#include "topologies/davis_southern_women.hpp"

#include <array>
#include <initializer_list>

namespace dtsim {

std::vector<std::pair<int, int>> davis_southern_women_edges() {
  // Events attended (1-based E-numbers) by each woman, in networkx's order: Evelyn Jefferson,
  // Laura Mandeville, Theresa Anderson, Brenda Rogers, Charlotte McDowd, Frances Anderson,
  // Eleanor Nye, Pearl Oglethorpe, Ruth DeSand, Verne Sanderson, Myra Liddel, Katherina
  // Rogers, Sylvia Avondale, Nora Fayette, Helen Lloyd, Dorothy Murchison, Olivia Carleton,
  // Flora Price.
  static const std::array<std::initializer_list<int>, 18> attended = {{
      {1, 2, 3, 4, 5, 6, 8, 9},
      {1, 2, 3, 5, 6, 7, 8},
      {2, 3, 4, 5, 6, 7, 8, 9},
      {1, 3, 4, 5, 6, 7, 8},
      {3, 4, 5, 7},
      {3, 5, 6, 8},
      {5, 6, 7, 8},
      {6, 8, 9},
      {5, 7, 8, 9},
      {7, 8, 9, 12},
      {8, 9, 10, 12},
      {8, 9, 10, 12, 13, 14},
      {7, 8, 9, 10, 12, 13, 14},
      {6, 7, 9, 10, 11, 12, 13, 14},
      {7, 8, 10, 11, 12},
      {8, 9},
      {9, 11},
      {9, 11},
  }};
  constexpr int kFirstEvent = static_cast<int>(attended.size()); // E1 is node 18
  std::vector<std::pair<int, int>> edges;
  for (int woman = 0; woman < static_cast<int>(attended.size()); ++woman)
    for (int event : attended[static_cast<std::size_t>(woman)])
      edges.emplace_back(woman, kFirstEvent + event - 1);
  return edges;
}

} // namespace dtsim
