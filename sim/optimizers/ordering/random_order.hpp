// SPDX-License-Identifier: MIT
// RandomOrder: D-RR (a fresh permutation per local epoch and node) or one fixed permutation.
#pragma once

#include "sim/engine/data_sampler.hpp"
#include "sim/optimizers/ordering/order_setup.hpp"

#include <vector>

namespace dtsim {

// Each node draws from its own DataSampler (stream ("data", node)): `random` reshuffles at
// every local epoch (D-RR, docs/algorithms.md, section 7), `fixed` keeps the first permutation.
// Batches wrap across epochs, exactly as the engine's original sampler did, so runs keep their
// traces. No per-example gradients, no coordination.
class RandomOrder final : public ExampleOrder {
public:
  RandomOrder(const OrderSetup& setup, bool reshuffle);
  std::string describe() const override;
  int next_batch(OrderChannel& channel, int node, std::span<std::uint32_t> out) override;
  bool acts_on_gradient_ready() const override { return false; }
  std::span<const std::uint32_t> epoch_order(int node, std::int64_t epoch) const override;
  std::size_t state_bytes() const override;

private:
  bool reshuffle_;
  std::vector<DataSampler> samplers_;
};

} // namespace dtsim
