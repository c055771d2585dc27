// SPDX-License-Identifier: MIT
// Graph builders for the `topology:` section, connectivity check and choice of mixing.
#include "topologies/make_topology.hpp"

#include "sim/core/errors.hpp"
#include "sim/core/registry.hpp"
#include "sim/core/rng.hpp"
#include "sim/core/text_rows.hpp"
#include "topologies/davis_southern_women.hpp"
#include "topologies/mixing.hpp"
#include "topologies/mixing_file.hpp"

#include <algorithm>
#include <boost/graph/adjacency_list.hpp>
#include <boost/graph/connected_components.hpp>
#include <cmath>
#include <cstddef>
#include <optional>

namespace dtsim {
namespace {

// The mixing matrix is still stored dense (nodes^2 doubles, 128 MiB at 4096) and checked in
// O(nodes^2), so larger graphs are refused rather than left to exhaust the machine. (Its
// spectrum no longer limits: Lanczos on the sparse W, 2 s for a 4096-node ring.)
// Set-up is O(n + edges) for sparse graphs; a million nodes is the timing-only runs' scale.
constexpr int kMaxNodes = 1'000'000;
constexpr int kMaxDenseNodes = 4096;

using Edges = std::vector<std::pair<int, int>>; // undirected, each edge once
using GraphKinds = Registry<Edges, int, std::uint64_t>;

// n = 1 is a single node and n = 2 a single edge: the only graphs "ring" can mean there.
Edges ring_edges(const Params&, int n, std::uint64_t) {
  Edges e;
  if (n == 2)
    e.emplace_back(0, 1);
  else if (n >= 3)
    for (int i = 0; i < n; ++i)
      e.emplace_back(i, (i + 1) % n);
  return e;
}

// The most square factorisation rows x cols = n with 3 <= rows <= cols, or {0, 0}.
std::pair<int, int> square_factors(int n) {
  for (int r = static_cast<int>(std::sqrt(static_cast<double>(n))) + 1; r >= 3; --r)
    if (r * r <= n && n % r == 0 && n / r >= 3)
      return {r, n / r};
  return {0, 0};
}

// Node r * cols + c links to its four wrap-around grid neighbours; rows, cols >= 3 keeps
// them distinct, so the graph is 4-regular.
Edges torus_edges(const Params& p, int n, std::uint64_t) {
  const Range side = Range::between(3, 100000); // longer sides make it a ring in all but name
  const bool has_rows = p.has("rows"), has_cols = p.has("cols");
  const std::string need = "torus needs nodes = rows x cols with rows, cols >= 3";
  std::int64_t rows = 0, cols = 0;
  if (!has_rows && !has_cols) {
    const auto [r, c] = square_factors(n);
    if (r == 0)
      p.fail("kind", need + "; nodes = " + std::to_string(n) + " has no such factorisation");
    rows = p.integer("rows", r, side);
    cols = p.integer("cols", c, side);
  } else if (has_rows && !has_cols) {
    rows = p.integer("rows", side);
    if (n % rows != 0 || n / rows < 3)
      p.fail("rows",
             need + ", got rows = " + std::to_string(rows) + " for nodes = " + std::to_string(n));
    cols = p.integer("cols", n / rows, side);
  } else if (!has_rows && has_cols) {
    cols = p.integer("cols", side);
    if (n % cols != 0 || n / cols < 3)
      p.fail("cols",
             need + ", got cols = " + std::to_string(cols) + " for nodes = " + std::to_string(n));
    rows = p.integer("rows", n / cols, side);
  } else {
    rows = p.integer("rows", side);
    cols = p.integer("cols", side);
    if (rows * cols != n)
      p.fail("rows", need + ", got rows = " + std::to_string(rows) +
                         ", cols = " + std::to_string(cols) + " for nodes = " + std::to_string(n));
  }
  const int nr = static_cast<int>(rows), nc = static_cast<int>(cols);
  Edges e;
  for (int r = 0; r < nr; ++r)
    for (int c = 0; c < nc; ++c) {
      e.emplace_back(r * nc + c, r * nc + (c + 1) % nc);
      e.emplace_back(r * nc + c, ((r + 1) % nr) * nc + c);
    }
  return e;
}

Edges complete_edges(const Params&, int n, std::uint64_t) {
  Edges e;
  for (int i = 0; i < n; ++i)
    for (int j = i + 1; j < n; ++j)
      e.emplace_back(i, j);
  return e;
}

Edges star_edges(const Params&, int n, std::uint64_t) {
  Edges e;
  for (int i = 1; i < n; ++i)
    e.emplace_back(0, i);
  return e;
}

int count_components(int n, const Edges& edges) {
  boost::adjacency_list<boost::vecS, boost::vecS, boost::undirectedS> g(
      static_cast<std::size_t>(n));
  for (const auto& [i, j] : edges)
    boost::add_edge(static_cast<std::size_t>(i), static_cast<std::size_t>(j), g);
  std::vector<int> component(static_cast<std::size_t>(n));
  return static_cast<int>(boost::connected_components(g, component.data()));
}

// G(n, p): each pair (i < j, in lexicographic order) is an edge with probability p, drawn
// once from the seed's "topology" stream. A disconnected draw is refused, never repaired:
// a silently re-drawn or patched graph would not be the G(n, p) the scenario asked for.
Edges erdos_renyi_edges(const Params& p, int n, std::uint64_t seed) {
  const double prob = p.number("p", 0.3, Range{0.0, 1.0, true, false});
  Rng rng = Rng::stream(seed, "topology", Rng::kNoNode);
  Edges e;
  for (int i = 0; i < n; ++i)
    for (int j = i + 1; j < n; ++j)
      if (rng.bernoulli(prob))
        e.emplace_back(i, j);
  const int k = count_components(n, e);
  if (k > 1)
    p.fail("p", "erdos_renyi graph with n=" + std::to_string(n) + ", p=" + format_number(prob) +
                    " is disconnected (" + std::to_string(k) + " components) for seed " +
                    std::to_string(seed) + "; raise p or change the seed");
  return e;
}

// Q_d: i -- i XOR 2^k, degree log2(n); n must be a power of two.
Edges hypercube_edges(const Params& p, int n, std::uint64_t) {
  if (n < 1 || (n & (n - 1)) != 0)
    p.fail("kind", "hypercube needs a power-of-two number of nodes, got " + std::to_string(n));
  Edges e;
  for (int i = 0; i < n; ++i)
    for (int bit = 1; bit < n; bit <<= 1)
      if (i < (i ^ bit))
        e.emplace_back(i, i ^ bit);
  return e;
}

// Static exponential graph (undirected): i -- i + 2^k (mod n) for every 2^k < n.
Edges exponential_edges(const Params&, int n, std::uint64_t) {
  Edges e;
  for (int i = 0; i < n; ++i)
    for (int hop = 1; hop < n; hop <<= 1) {
      const int j = (i + hop) % n;
      if (i != j)
        e.emplace_back(std::min(i, j), std::max(i, j));
    }
  std::sort(e.begin(), e.end());
  e.erase(std::unique(e.begin(), e.end()), e.end());
  return e;
}

// The QG papers' 32-node "social network": only defined for exactly 32 nodes.
Edges social_edges(const Params& p, int n, std::uint64_t) {
  if (n != kDavisSouthernWomenNodes)
    p.fail("kind", "social is the 32-node Davis Southern Women graph; set nodes: 32, got " +
                       std::to_string(n));
  return davis_southern_women_edges();
}

// A user graph: one undirected edge "i j" (0-based node ids) per line; '#' starts a comment.
Edges file_edges(const Params& p, int n, std::uint64_t) {
  const std::string path = p.file_path("file");
  const auto rows = read_text_rows(path);
  if (!rows)
    p.fail("file", "cannot open edge-list file " + path);
  Edges e;
  for (const TextRow& r : *rows) {
    const bool pair = r.fields.size() == 2;
    const auto a = pair ? parse_integer(r.fields[0]) : std::nullopt;
    const auto b = pair ? parse_integer(r.fields[1]) : std::nullopt;
    const std::string where = path + ":" + std::to_string(r.line) + ": ";
    if (!a || !b)
      p.fail("file", where + "expected two node ids 'i j', got '" + r.text + "'");
    const long long i = *a, j = *b;
    if (i < 0 || j < 0 || i >= n || j >= n)
      p.fail("file", where + "node id out of range [0, " + std::to_string(n - 1) +
                         "] for nodes = " + std::to_string(n));
    if (i == j)
      p.fail("file", where + "self-loop " + std::to_string(i) + " -- " + std::to_string(j) +
                         " (self weights come from the mixing rule)");
    e.emplace_back(static_cast<int>(std::min(i, j)), static_cast<int>(std::max(i, j)));
  }
  std::sort(e.begin(), e.end());
  e.erase(std::unique(e.begin(), e.end()), e.end());
  return e;
}

const GraphKinds& graph_kinds() {
  static const GraphKinds kinds = [] {
    GraphKinds r;
    r.add("ring", "cycle i -- i+1 (mod n), degree 2; n = 1 is one node, n = 2 one edge",
          ring_edges);
    r.add("torus",
          "2-D grid with wrap-around, degree 4; rows x cols = nodes, both >= 3 "
          "(default: the most square)",
          torus_edges);
    r.add("complete", "every pair linked, degree n-1; W = 11^T/n", complete_edges);
    r.add("star", "node 0 is the hub linked to all others; diameter 2", star_edges);
    r.add("erdos_renyi",
          "random G(n, p) graph (p default 0.3) from the seed; refused if "
          "disconnected",
          erdos_renyi_edges);
    r.add("hypercube", "i -- i XOR 2^k, degree log2(n); nodes must be a power of two",
          hypercube_edges);
    r.add("exponential", "static exponential graph: i -- i + 2^k (mod n) for 2^k < n",
          exponential_edges);
    r.add("social", "Davis Southern Women graph (18 women, 14 events, 89 edges); exactly 32 nodes",
          social_edges);
    r.add("edges", "a user graph from `file`: one 'i j' edge per line (0-based, # comments)",
          file_edges);
    // Time-varying schedules (mixing_schedule.hpp): the static graph is the union of their
    // rounds' edges, for algorithms that use one fixed graph and for `dtsim topology`.
    r.add("one_peer_exponential",
          "time-varying: round r pairs i with i + 2^(r mod ceil(log2 n)), weights 1/2 (gossip "
          "methods in sync mode); static union = exponential",
          exponential_edges);
    r.add("random_pairs",
          "time-varying: a seeded random perfect matching per round, weights 1/2 (gossip "
          "methods in sync mode); static union = complete",
          complete_edges);
    return r;
  }();
  return kinds;
}

std::vector<std::vector<int>> to_neighbors(int n, const Edges& edges) {
  std::vector<std::vector<int>> nb(static_cast<std::size_t>(n));
  for (const auto& [i, j] : edges) {
    DTSIM_ASSERT(i != j, "builders make no self-loops");
    nb[static_cast<std::size_t>(i)].push_back(j);
    nb[static_cast<std::size_t>(j)].push_back(i);
  }
  for (auto& row : nb) {
    std::sort(row.begin(), row.end());
    DTSIM_ASSERT(std::adjacent_find(row.begin(), row.end()) == row.end(),
                 "builders make each edge once");
  }
  return nb;
}

// "file:line: topology" for errors about the section as a whole.
std::string section_where(const Params& p) {
  std::string s = p.file().empty() ? "" : p.file() + ":";
  if (p.node().line > 0)
    s += std::to_string(p.node().line) + ":";
  if (!s.empty())
    s += " ";
  return s + (p.path().empty() ? "topology" : p.path());
}

// `mixing: metropolis` or `mixing: {kind: metropolis}`: what a time-varying kind's union has.
bool is_metropolis(const ParamNode& mixing) {
  if (mixing.kind == ParamNode::Kind::Scalar)
    return mixing.scalar == "metropolis";
  if (mixing.kind != ParamNode::Kind::Map || mixing.fields.size() != 1)
    return false;
  const ParamNode* kind = mixing.find("kind");
  return kind && kind->kind == ParamNode::Kind::Scalar && kind->scalar == "metropolis";
}

} // namespace

Topology make_topology(const Params& topology, int nodes, std::uint64_t seed) {
  const GraphKinds& kinds = graph_kinds();
  const std::string kind = topology.choice("kind", "ring", kinds.names());
  // Time-varying kinds mix with their rounds' own weights (1/2 per pair); the union graph's
  // Metropolis weights only describe it. Any other choice would be silently unused.
  if (kind == "one_peer_exponential" || kind == "random_pairs")
    if (const ParamNode* m = topology.node().find("mixing"); m && !is_metropolis(*m))
      topology.fail("mixing", "not used by " + kind +
                                  ": its rounds average pairs with weights 1/2; remove "
                                  "topology.mixing or use a static kind");
  // mixing: metropolis | uniform, or {kind: metropolis | uniform | file, path: W.csv}.
  std::string mixing;
  std::optional<Params> mixing_map;
  if (const ParamNode* m = topology.node().find("mixing"); m && m->kind == ParamNode::Kind::Map) {
    mixing_map = topology.child("mixing");
    mixing = mixing_map->choice("kind", "metropolis", {"metropolis", "uniform", "file"});
  } else {
    mixing = topology.choice("mixing", "metropolis", {"metropolis", "uniform"});
  }
  const std::string mixing_file = mixing == "file" ? mixing_map->file_path("path") : "";
  if (nodes < 1 || nodes > kMaxNodes)
    throw ConfigError(section_where(topology) + ": expected nodes in [1, " +
                      std::to_string(kMaxNodes) + "], got " + std::to_string(nodes));
  // Kinds whose graph (or static union) has about n^2/2 edges: memory and set-up grow with
  // n^2, so they stop where a dense matrix would.
  static const std::vector<std::string> dense_kinds = {"complete", "erdos_renyi", "random_pairs"};
  if (nodes > kMaxDenseNodes &&
      std::find(dense_kinds.begin(), dense_kinds.end(), kind) != dense_kinds.end())
    topology.fail("kind",
                  kind + " has O(n^2) edges; expected nodes <= " + std::to_string(kMaxDenseNodes) +
                      " for it, got " + std::to_string(nodes) +
                      " (sparse kinds: ring, torus, exponential, "
                      "one_peer_exponential, hypercube, star, edges)");

  const Edges edges = kinds.find(kind)->make(topology, nodes, seed);
  const int components = count_components(nodes, edges);
  if (components > 1)
    topology.fail("kind", kind + " graph with " + std::to_string(nodes) +
                              " nodes is disconnected (" + std::to_string(components) +
                              " components)");
  std::vector<std::vector<int>> nb = to_neighbors(nodes, edges);

  MixingWeights w;
  if (mixing == "file") {
    const auto fail = [&](const std::string& m) { mixing_map->fail("path", m); };
    w = mixing_from_matrix(read_square_matrix(mixing_file, "mixing weights", fail), nb,
                           [&](const std::string& m) { fail(mixing_file + ": " + m); });
  } else if (mixing == "uniform") {
    if (!is_regular(nb)) {
      const auto [lo, hi] = std::minmax_element(
          nb.begin(), nb.end(), [](const auto& a, const auto& b) { return a.size() < b.size(); });
      topology.fail("mixing", "uniform mixing needs a regular graph, but this " + kind +
                                  " has degrees " + std::to_string(lo->size()) + ".." +
                                  std::to_string(hi->size()) + "; use metropolis");
    }
    w = uniform_weights(nb);
  } else {
    w = metropolis_weights(nb);
  }
  return Topology(kind, std::move(nb), std::move(w));
}

std::vector<std::pair<std::string, std::string>> topology_kinds() {
  std::vector<std::pair<std::string, std::string>> out;
  for (const auto& e : graph_kinds().entries())
    out.emplace_back(e.name, e.help);
  return out;
}

} // namespace dtsim
