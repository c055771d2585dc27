// SPDX-License-Identifier: MIT
// What an example-orderer factory needs besides its own keys, and the orderer registry.
#pragma once

#include "data/partition.hpp"
#include "sim/core/registry.hpp"
#include "sim/engine/example_order.hpp"

#include <cstddef>
#include <cstdint>
#include <memory>
#include <vector>

namespace dtsim {

class Model;

// The pointers need to be valid only while the orderer is constructed (orderers copy what
// they keep: the node index lists, num_params()).
struct OrderSetup {
  int nodes = 0;
  int batch_size = 1;
  std::uint64_t seed = 0;
  const Partition* partition = nullptr;
  const Model* model = nullptr;
};

using OrderRegistry = Registry<std::unique_ptr<ExampleOrder>, const OrderSetup&>;

// Node's first-epoch order: the permutation D-RR starts with (stream ("data", node)), so
// every orderer executes the same first epoch.
std::vector<std::uint32_t> initial_order(const OrderSetup& setup, int node);

// The orderers `data.order.kind` may name: the built-ins, then any added with
// order_registry().add(...) before planning runs (process-wide, as algorithm_registry()).
OrderRegistry& order_registry();

// Builds the orderer of a `data.order:` section (kind default `random`). Throws ConfigError
// for an unknown kind, a bad key, or an orderer that needs per-example gradients with a
// model that does not compute them.
std::unique_ptr<ExampleOrder> make_order(const Params& p, const OrderSetup& setup);

} // namespace dtsim
