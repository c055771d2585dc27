// SPDX-License-Identifier: MIT
// `dtsim topology KIND --nodes N`: degree range, diameter, spectral gap and smallest
// eigenvalue of the mixing matrix (d2 needs it above -1/3) of a graph (for a
// time-varying kind: of the union of its rounds, plus how its rounds average).
#include "apps/arg_cursor.hpp"
#include "apps/commands.hpp"
#include "sim/core/errors.hpp"
#include "sim/core/params.hpp"
#include "sim/scenario/yaml_tree.hpp"
#include "topologies/make_topology.hpp"
#include "topologies/mixing_schedule.hpp"

#include <cstdio>
#include <limits>
#include <memory>

namespace dtsim::cli {
namespace {

constexpr long long kMaxNodes = 1000000; // as a scenario's `nodes:`

} // namespace

int topology_command(const std::vector<std::string>& args) {
  auto tree = std::make_shared<ParamNode>(ParamNode::make_map());
  long long nodes = -1;
  std::uint64_t seed = 1;
  std::string kind;
  for (ArgCursor c("topology", args); c.next();) {
    const std::string& a = c.arg();
    if (a == "--nodes" || a == "-n") {
      nodes = c.integer_value(1, kMaxNodes);
    } else if (a == "--seed") {
      seed = static_cast<std::uint64_t>(c.integer_value(0, std::numeric_limits<long long>::max()));
    } else if (a == "--set") {
      // Both the topology section's own form (file=e.txt) and a scenario's dotted path
      // (topology.file=e.txt) name the same key.
      std::string assignment = c.value();
      if (assignment.rfind("topology.", 0) == 0)
        assignment.erase(0, 9);
      if (assignment.rfind("kind=", 0) == 0)
        throw ConfigError("--set kind: the kind is the command's argument (dtsim topology " +
                          assignment.substr(5) + " --nodes N)");
      apply_override(*tree, assignment);
    } else if (c.is_option()) {
      c.unknown_option();
    } else if (kind.empty()) {
      kind = a;
    } else {
      throw ConfigError("topology: more than one kind given ('" + kind + "', '" + a + "')");
    }
  }
  if (kind.empty() || nodes < 1)
    throw ConfigError("topology: usage: dtsim topology KIND --nodes N [--set key=value]");
  // Written as a key of the "topology" section, so that an unknown kind reads
  // "topology: kind: unknown name ..." rather than naming a --set nobody typed.
  tree->fields.emplace_back("kind", ParamNode::make_scalar(kind));
  const Params p(tree, "topology");
  const Topology t = make_topology(p, static_cast<int>(nodes), seed);
  p.reject_unused();
  std::printf("topology: %s, %d nodes, %zu edges\n", t.name().c_str(), t.size(), t.num_edges());
  std::printf("degree: %d..%d\n", t.min_degree(), t.max_degree());
  if (t.diameter_exact())
    std::printf("diameter: %d\n", t.diameter());
  else
    std::printf("diameter: >= %d (double BFS sweep; exact only up to %d nodes)\n", t.diameter(),
                kExactDiameterMaxNodes);
  // Six significant digits once the gap is small (a 100,000-node ring's is about 1e-9).
  std::printf(t.spectral_gap() < 1e-3 ? "spectral gap: %.6g\n" : "spectral gap: %.6f\n",
              t.spectral_gap());
  std::printf("smallest eigenvalue of W: %.6f\n", t.min_eigenvalue());
  const auto schedule = make_mixing_schedule(p, t, seed);
  if (!schedule->time_varying())
    return 0;
  std::printf("time-varying: %s rounds, one peer per round, weights 1/2 (sync gossip methods); "
              "the graph above is their union\n",
              schedule->name().c_str());
  const std::int64_t period = schedule->period();
  if (period == 0) {
    std::printf("period: none (a new random matching every round, seed %llu)\n",
                static_cast<unsigned long long>(seed));
    return 0;
  }
  std::printf("period: %lld rounds\n", static_cast<long long>(period));
  // The product over one period against the exact average 11^T/n (dense: small n only).
  if (t.size() <= 256) {
    Eigen::MatrixXd product = Eigen::MatrixXd::Identity(t.size(), t.size());
    for (std::int64_t r = 0; r < period; ++r)
      product = schedule->matrix(r) * product;
    const double deviation = (product.array() - 1.0 / t.size()).abs().maxCoeff();
    std::printf("one period vs exact average: max |W(%lld)...W(0) - 11^T/n| = %.6f\n",
                static_cast<long long>(period - 1), deviation);
  }
  return 0;
}

} // namespace dtsim::cli
