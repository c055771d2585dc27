// SPDX-License-Identifier: MIT
#include "sim/scenario/named_choices.hpp"

#include "data/load_dataset.hpp"
#include "data/partition.hpp"
#include "models/make_model.hpp"
#include "sim/optimizers/algorithm_setup.hpp"
#include "sim/optimizers/compression/compressor.hpp"
#include "sim/optimizers/ordering/order_setup.hpp"
#include "sim/system/compute_time_model.hpp"
#include "topologies/make_topology.hpp"

namespace dtsim {
namespace {

template <class R> std::vector<std::pair<std::string, std::string>> pairs_of(const R& registry) {
  std::vector<std::pair<std::string, std::string>> v;
  for (const auto& e : registry.entries())
    v.emplace_back(e.name, e.help);
  return v;
}

} // namespace

std::vector<NamedChoices> named_choices() {
  return {{"algorithm.name", "algorithms", pairs_of(algorithm_registry())},
          {"algorithm.compressor.kind", "compressors", pairs_of(compressor_registry())},
          {"data.order.kind", "example orders", pairs_of(order_registry())},
          {"model.kind", "models", model_kinds()},
          {"topology.kind", "topologies", topology_kinds()},
          {"data.partition.kind", "partitions", partition_kinds()},
          {"data.dataset", "datasets", dataset_kinds()},
          {"system.compute.dist", "compute-time distributions", compute_distributions()}};
}

} // namespace dtsim
