// SPDX-License-Identifier: MIT
// The explicit list of built-in example orderers and the `data.order:` factory.
#include "models/model.hpp"
#include "sim/core/rng.hpp"
#include "sim/optimizers/ordering/cd_grab_order.hpp"
#include "sim/optimizers/ordering/local_balance_order.hpp"
#include "sim/optimizers/ordering/order_setup.hpp"
#include "sim/optimizers/ordering/random_order.hpp"

namespace dtsim {

std::vector<std::uint32_t> initial_order(const OrderSetup& setup, int node) {
  std::vector<std::uint32_t> order = setup.partition->node_indices[static_cast<std::size_t>(node)];
  Rng rng = Rng::stream(setup.seed, "data", static_cast<std::uint64_t>(node));
  rng.shuffle(order);
  return order;
}

namespace {

OrderRegistry builtin_orders() {
  using Balance = LocalBalanceOrder::Balance;
  OrderRegistry r;
  r.add("random", "D-RR: a fresh permutation of each node's examples every local epoch",
        [](const Params&, const OrderSetup& s) { return std::make_unique<RandomOrder>(s, true); });
  r.add("fixed", "one seeded permutation per node, kept every epoch",
        [](const Params&, const OrderSetup& s) { return std::make_unique<RandomOrder>(s, false); });
  r.add("grab", "GraB per node: stale-mean online balancing of its own examples",
        [](const Params&, const OrderSetup& s) {
          return std::make_unique<LocalBalanceOrder>(s, Balance::Mean, "grab");
        });
  r.add("pair-balance", "PairBalance per node: balances differences of consecutive examples",
        [](const Params&, const OrderSetup& s) {
          return std::make_unique<LocalBalanceOrder>(s, Balance::Pair, "pair-balance");
        });
  r.add("id-grab", "independent balancing: each node alone; balance: pair | mean",
        [](const Params& p, const OrderSetup& s) {
          const bool pair = p.choice("balance", "pair", {"pair", "mean"}) == "pair";
          return std::make_unique<LocalBalanceOrder>(s, pair ? Balance::Pair : Balance::Mean,
                                                     "id-grab");
        });
  r.add("cd-grab", "coordinated GraB: one running sum over all nodes' pairs at a coordinator",
        [](const Params& p, const OrderSetup& s) { return std::make_unique<CdGrabOrder>(p, s); });
  return r;
}

} // namespace

OrderRegistry& order_registry() {
  static OrderRegistry registry = builtin_orders();
  return registry;
}

std::unique_ptr<ExampleOrder> make_order(const Params& p, const OrderSetup& setup) {
  std::unique_ptr<ExampleOrder> order = order_registry().make(p, "kind", "random", setup);
  if (order->needs_per_example_grads() && !setup.model->supports_per_example_grads())
    p.fail("kind", "'" + p.text("kind") + "' balances per-example gradients, which model " +
                       setup.model->describe() +
                       " does not compute; use random or fixed, or another model");
  return order;
}

} // namespace dtsim
