// SPDX-License-Identifier: MIT
// Splitting a training set across nodes: validation, dispatch and label histograms.
#include "data/partition.hpp"

#include "data/partition_methods.hpp"
#include "sim/core/errors.hpp"

namespace dtsim {
namespace {

// "file:line: data.partition", for errors about the section as a whole.
std::string section_where(const Params& p) {
  std::string s = p.file().empty() ? "" : p.file() + ":";
  if (p.node().line > 0)
    s += std::to_string(p.node().line) + ":";
  return (s.empty() ? "" : s + " ") + (p.path().empty() ? "partition" : p.path());
}

} // namespace

std::vector<std::vector<std::uint32_t>> indices_by_class(std::span<const std::int32_t> labels,
                                                         int num_classes) {
  std::vector<std::vector<std::uint32_t>> by_class(static_cast<std::size_t>(num_classes));
  for (std::size_t i = 0; i < labels.size(); ++i)
    by_class[static_cast<std::size_t>(labels[i])].push_back(static_cast<std::uint32_t>(i));
  return by_class;
}

Partition make_partition(const Params& partition, std::span<const std::int32_t> labels,
                         int num_classes, int nodes, std::uint64_t seed) {
  const std::string kind = partition.choice(
      "kind", "iid", {"iid", "dirichlet", "dirichlet_qg", "shards", "classes_per_node"});
  const std::string where = section_where(partition);
  if (nodes < 1 || static_cast<std::size_t>(nodes) > labels.size())
    throw ConfigError(where + ": cannot split " + std::to_string(labels.size()) +
                      " training examples among " + std::to_string(nodes) +
                      " nodes; every node needs at least one (use fewer nodes or more data)");
  DTSIM_ASSERT(num_classes >= 1, "make_partition needs at least one class");
  DTSIM_ASSERT(labels.size() <= std::size_t{0xffffffffU}, "indices must fit in 32 bits");
  for (std::int32_t y : labels)
    DTSIM_ASSERT(y >= 0 && y < num_classes, "label out of range");

  Rng rng = Rng::stream(seed, "partition", Rng::kNoNode);
  Partition out;
  if (kind == "iid")
    out.node_indices = partition_iid(labels.size(), nodes, rng);
  else if (kind == "dirichlet")
    out.node_indices = partition_dirichlet(partition, labels, num_classes, nodes, rng, where);
  else if (kind == "dirichlet_qg")
    out.node_indices = partition_dirichlet_qg(partition, labels, num_classes, nodes, rng);
  else if (kind == "classes_per_node")
    out.node_indices = partition_classes_per_node(partition, labels, num_classes, nodes, rng);
  else
    out.node_indices = partition_shards(partition, labels, num_classes, nodes, rng);

  out.label_histogram.assign(static_cast<std::size_t>(nodes),
                             std::vector<std::int64_t>(static_cast<std::size_t>(num_classes), 0));
  for (std::size_t i = 0; i < out.node_indices.size(); ++i) {
    DTSIM_ASSERT(!out.node_indices[i].empty(), "a partition left a node without data");
    for (std::uint32_t k : out.node_indices[i])
      ++out.label_histogram[i][static_cast<std::size_t>(labels[k])];
  }
  return out;
}

std::vector<std::pair<std::string, std::string>> partition_kinds() {
  return {
      {"iid", "uniform random split into equal parts"},
      {"dirichlet", "per-class Dirichlet(alpha) label skew, redrawn until every node has "
                    "min_size examples (keys alpha, min_size, max_redraws)"},
      {"dirichlet_qg", "the QG-DSGDm code's Dirichlet split: groups of group_size nodes, "
                       "equal node sizes (keys alpha, group_size, max_redraws)"},
      {"shards", "label-sorted shards, shards_per_node of them per node (key shards_per_node)"},
      {"classes_per_node", "node i owns classes (i*k+j) mod C, each split equally among its "
                           "owners, nodes cut to equal size (key classes_per_node)"},
  };
}

} // namespace dtsim
