// SPDX-License-Identifier: MIT
// What an algorithm factory needs to know besides its own parameters.
#pragma once

#include "sim/core/registry.hpp"
#include "sim/engine/algorithm.hpp"

#include <cstddef>
#include <memory>

namespace dtsim {

class Topology;

struct AlgorithmSetup {
  int nodes = 0;
  std::size_t num_params = 0;
  const Topology* topology = nullptr;
};

using AlgorithmRegistry = Registry<std::unique_ptr<Algorithm>, const AlgorithmSetup&>;

// Every built-in algorithm, by the name used in `algorithm.name`.
AlgorithmRegistry builtin_algorithms();

} // namespace dtsim
