// SPDX-License-Identifier: MIT
// What an algorithm factory needs to know besides its own parameters.
#pragma once

#include "sim/core/registry.hpp"
#include "sim/engine/algorithm.hpp"

#include <cstddef>
#include <cstdint>
#include <memory>
#include <vector>

namespace dtsim {

class MixingSchedule;
class Topology;

struct AlgorithmSetup {
  int nodes = 0;
  std::size_t num_params = 0;
  const Topology* topology = nullptr;
  // Round-by-round mixing for gossip methods; null = the topology's W in every round.
  const MixingSchedule* mixing = nullptr;
  // For learning-rate schedules (lr_schedule.hpp): the local minibatch size, the run's budget
  // in epochs (stop.epochs, or stop.steps converted; 0 = only a time budget) and the number
  // of training examples of each node (empty = unknown).
  int batch_size = 0;
  double budget_epochs = 0;
  std::vector<std::int64_t> node_samples = {};
  // Timing-only runs (model kind none): vectors are empty (num_params 0) and messages stand
  // for this many floats. 0 otherwise.
  std::size_t timing_wire_params = 0;

  // Floats a dense message carries on the wire (message sizes, compression statistics).
  std::size_t wire_params() const {
    return timing_wire_params > 0 ? timing_wire_params : num_params;
  }
};

using AlgorithmRegistry = Registry<std::unique_ptr<Algorithm>, const AlgorithmSetup&>;

// The algorithms `algorithm.name` may name: the built-ins, then any a program added with
// algorithm_registry().add(name, help, factory) before planning runs (docs/extending.md).
// Process-wide; not to be changed while runs are planned on other threads.
AlgorithmRegistry& algorithm_registry();

} // namespace dtsim
