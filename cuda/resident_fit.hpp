// SPDX-License-Identifier: MIT
// Whether the resident backend's vectors fit the device (backend cuda-resident): host code,
// tested without a GPU.
#pragma once

#include <cstddef>
#include <string>

namespace dtsim::cuda {

// About how many vectors of P floats per node the resident store holds by default: model,
// gradient and momentum rows and about two messages (a gossip node's outgoing one and the
// copies its neighbours hold), or for AD-PSGD a live model and about one message (an active
// node's request and its partner's reply in flight, per pair). An algorithm with rows of its
// own says how many more (Algorithm::resident_vectors_per_node).
constexpr std::size_t kResidentVectors = 5;

// What cuda-resident sets aside: nodes (0: nothing, the algorithm does not attach) and
// vectors per node. From an int: that many nodes, the default vectors.
struct ResidentSize {
  int nodes = 0;
  std::size_t vectors_per_node = kResidentVectors;
  ResidentSize() = default;
  ResidentSize(int n, std::size_t vectors = kResidentVectors) // NOLINT: an int names the nodes
      : nodes(n), vectors_per_node(vectors) {}
};

// Device bytes per node the resident store holds.
inline std::size_t resident_bytes_per_node(std::size_t num_params,
                                           std::size_t vectors = kResidentVectors) {
  return vectors * num_params * sizeof(float);
}

// Empty when `nodes` nodes' resident vectors fit in `usable` bytes; otherwise the one-line
// reason. Unlike the chunks of a device batch, the resident vectors cannot be split.
inline std::string resident_fit_error(int nodes, std::size_t num_params, std::size_t usable,
                                      const std::string& device,
                                      std::size_t vectors = kResidentVectors) {
  const std::size_t per_node = resident_bytes_per_node(num_params, vectors);
  const std::size_t needed = static_cast<std::size_t>(nodes) * per_node;
  if (needed <= usable)
    return {};
  const auto mib = [](std::size_t bytes) { return std::to_string((bytes + (1 << 19)) >> 20); };
  const auto gib = [](std::size_t bytes) {
    return std::to_string((bytes + (std::size_t{1} << 29)) >> 30);
  };
  return "backend cuda-resident keeps about " + mib(per_node) +
         " MiB per node on the device: " + std::to_string(nodes) + " nodes need " + gib(needed) +
         " GiB, more than the " + gib(usable) + " GiB (three quarters of " + device +
         "'s memory) it may use; backend cuda runs any number of nodes, in chunks";
}

} // namespace dtsim::cuda
