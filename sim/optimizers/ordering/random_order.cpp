// SPDX-License-Identifier: MIT
// D-RR and fixed orders over the nodes' DataSamplers.
#include "sim/optimizers/ordering/random_order.hpp"

namespace dtsim {

RandomOrder::RandomOrder(const OrderSetup& setup, bool reshuffle) : reshuffle_(reshuffle) {
  samplers_.reserve(static_cast<std::size_t>(setup.nodes));
  for (int i = 0; i < setup.nodes; ++i)
    samplers_.emplace_back(setup.partition->node_indices[static_cast<std::size_t>(i)], setup.seed,
                           i, reshuffle);
}

std::string RandomOrder::describe() const {
  return reshuffle_ ? "random (D-RR: a fresh permutation per node and local epoch)"
                    : "fixed (one permutation per node, kept every epoch)";
}

int RandomOrder::next_batch(OrderChannel&, int node, std::span<std::uint32_t> out) {
  samplers_[static_cast<std::size_t>(node)].next_batch(out);
  return static_cast<int>(out.size());
}

std::span<const std::uint32_t> RandomOrder::epoch_order(int node, std::int64_t epoch) const {
  const DataSampler& s = samplers_[static_cast<std::size_t>(node)];
  if (epoch < s.epochs_started() - 1 && !s.previous_order().empty())
    return s.previous_order();
  return s.current_order();
}

std::size_t RandomOrder::state_bytes() const {
  std::size_t bytes = 0;
  for (const DataSampler& s : samplers_)
    bytes += 2 * s.size() * sizeof(std::uint32_t);
  return bytes;
}

} // namespace dtsim
