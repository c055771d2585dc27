// SPDX-License-Identifier: MIT
// LocalBalanceOrder: every node balances its own examples alone (GraB, PairBalance, ID-GraB).
#pragma once

#include "sim/optimizers/ordering/balancers.hpp"
#include "sim/optimizers/ordering/epoch_orders.hpp"
#include "sim/optimizers/ordering/order_setup.hpp"

#include <string>
#include <vector>

namespace dtsim {

// Per node: the current order (epoch 0: the D-RR permutation), and the next one built online
// from this epoch's per-example gradients with the node's own running sum
// (docs/algorithms.md, section 7; "ID-GraB" when n > 1, centralized GraB when n = 1).
//   balance: mean  GraB with the stale mean of the previous epoch (kind `grab`)
//   balance: pair  PairBalance over consecutive examples (kind `pair-balance`); a pair may
//                  straddle two batches (the first example's gradient is cached); an odd
//                  epoch's last example takes the middle slot.
// Balancing runs in the node's gradient task (observe); the next order becomes current on
// the engine thread when the node draws past its epoch's end. Epochs end with a short batch
// when the batch size does not divide the node's data.
class LocalBalanceOrder final : public ExampleOrder {
public:
  enum class Balance { Mean, Pair };
  LocalBalanceOrder(const OrderSetup& setup, Balance balance, std::string kind);
  std::string describe() const override;
  bool needs_per_example_grads() const override { return true; }
  int next_batch(OrderChannel& channel, int node, std::span<std::uint32_t> out) override;
  bool acts_on_gradient_ready() const override { return false; }
  void observe(int node, std::span<const std::uint32_t> ids,
               std::span<const float> per_example) override;
  std::span<const std::uint32_t> epoch_order(int node, std::int64_t epoch) const override;
  std::size_t state_bytes() const override;

private:
  struct NodeState {
    NodeState(std::vector<std::uint32_t> first, std::size_t dim, Balance balance);
    EpochOrders orders;
    MeanBalancer mean; // used with Balance::Mean
    PairBalancer pair; // used with Balance::Pair
    Vec cached;        // pair: the gradient of a pair's first example
    std::uint32_t cached_id = 0;
    bool has_cached = false;
  };

  Balance balance_;
  std::string kind_;
  std::size_t dim_;
  std::vector<NodeState> nodes_;
};

} // namespace dtsim
