// SPDX-License-Identifier: MIT
// `dtsim list`: every name a scenario may use, with one-line help.
#include "apps/commands.hpp"
#include "data/load_dataset.hpp"
#include "data/partition.hpp"
#include "models/make_model.hpp"
#include "sim/core/errors.hpp"
#include "sim/optimizers/algorithm_setup.hpp"
#include "sim/optimizers/compression/compressor.hpp"
#include "sim/optimizers/ordering/order_setup.hpp"
#include "topologies/make_topology.hpp"

#include <iostream>

namespace dtsim::cli {
namespace {

void print_pairs(const char* title, const std::vector<std::pair<std::string, std::string>>& v) {
  std::cout << title << ":\n";
  for (const auto& [name, help] : v) {
    std::cout << "  " << name;
    for (std::size_t i = name.size(); i < 22; ++i)
      std::cout << ' ';
    std::cout << help << '\n';
  }
}

} // namespace

int list_command(const std::vector<std::string>& args) {
  if (!args.empty())
    throw ConfigError("list: takes no arguments");
  std::cout << "algorithms (algorithm.name):\n";
  builtin_algorithms().describe(std::cout);
  std::cout << "compressors (algorithm.compressor.kind):\n";
  builtin_compressors().describe(std::cout);
  std::cout << "example orders (data.order.kind):\n";
  builtin_orders().describe(std::cout);
  print_pairs("models (model.kind)", model_kinds());
  print_pairs("topologies (topology.kind)", topology_kinds());
  print_pairs("partitions (data.partition.kind)", partition_kinds());
  print_pairs("datasets (data.dataset)", dataset_kinds());
  print_pairs("compute-time distributions (system.compute.dist)",
              {{"constant", "every minibatch takes mean_s"},
               {"normal", "mean_s * (1 + sigma * N(0,1)), truncated at 1% of mean_s"},
               {"lognormal", "log-normal with mean mean_s and log-std sigma"},
               {"exponential", "exponential with mean mean_s"},
               {"gamma", "gamma with shape k and mean mean_s"},
               {"trace", "per-node minibatch times replayed from a file (compute.file)"}});
  return 0;
}

} // namespace dtsim::cli
