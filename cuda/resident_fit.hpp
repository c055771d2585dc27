// SPDX-License-Identifier: MIT
// Whether the resident backend's vectors fit the device (backends cuda and cuda-resident):
// host code, tested without a GPU.
#pragma once

#include <cstddef>
#include <stdexcept>
#include <string>

namespace dtsim::cuda {

// About how many vectors of P floats per node the resident store holds by default: model,
// gradient and momentum rows and about two messages (a gossip node's outgoing one and the
// copies its neighbours hold), or for AD-PSGD a live model and about one message (an active
// node's request and its partner's reply in flight, per pair). An algorithm with rows of its
// own says how many more (Algorithm::resident_vectors_per_node).
constexpr std::size_t kResidentVectors = 5;

// What the device sets aside for resident vectors: nodes (0: nothing, the algorithm does not
// attach) and vectors per node, and whether a run they do not fit is refused (required:
// backend cuda-resident) or goes on with the vectors on the host (backend cuda, which then
// runs as cuda-batched). From an int: that many nodes, the default vectors, required.
struct ResidentSize {
  int nodes = 0;
  std::size_t vectors_per_node = kResidentVectors;
  bool required = true;
  ResidentSize() = default;
  ResidentSize(int n, std::size_t vectors = kResidentVectors,
               bool must_fit = true) // NOLINT: an int names the nodes
      : nodes(n), vectors_per_node(vectors), required(must_fit) {}
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
         "'s memory) it may use; backend cuda or cuda-batched runs any number of nodes, their "
         "vectors on the host";
}

// How many nodes' vectors the device keeps: resident.nodes where they fit in `usable` bytes.
// Where they do not: 0 (the run goes on with its vectors on the host) unless
// resident.required, which throws std::runtime_error with resident_fit_error's line.
inline int resident_nodes_kept(const ResidentSize& resident, std::size_t num_params,
                               std::size_t usable, const std::string& device) {
  if (resident.nodes <= 0)
    return 0;
  const std::string why =
      resident_fit_error(resident.nodes, num_params, usable, device, resident.vectors_per_node);
  if (why.empty())
    return resident.nodes;
  if (resident.required)
    throw std::runtime_error(why);
  return 0;
}

} // namespace dtsim::cuda
