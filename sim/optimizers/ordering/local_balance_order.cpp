// SPDX-License-Identifier: MIT
// Independent per-node balancing in the gradient tasks.
#include "sim/optimizers/ordering/local_balance_order.hpp"

#include "models/model.hpp"
#include "sim/core/errors.hpp"

#include <algorithm>

namespace dtsim {

LocalBalanceOrder::NodeState::NodeState(std::vector<std::uint32_t> first, std::size_t dim,
                                        Balance balance)
    : orders(std::move(first)), mean(balance == Balance::Mean ? dim : 0, orders.size()),
      pair(balance == Balance::Pair ? dim : 0),
      cached(balance == Balance::Pair ? static_cast<Eigen::Index>(dim) : 0) {}

LocalBalanceOrder::LocalBalanceOrder(const OrderSetup& setup, Balance balance, std::string kind)
    : balance_(balance), kind_(std::move(kind)), dim_(setup.model->num_params()) {
  nodes_.reserve(static_cast<std::size_t>(setup.nodes));
  for (int i = 0; i < setup.nodes; ++i)
    nodes_.emplace_back(initial_order(setup, i), dim_, balance);
}

std::string LocalBalanceOrder::describe() const {
  return kind_ + (balance_ == Balance::Mean ? " (each node balances alone, stale-mean GraB)"
                                            : " (each node balances alone, PairBalance)");
}

int LocalBalanceOrder::next_batch(OrderChannel&, int node, std::span<std::uint32_t> out) {
  NodeState& s = nodes_[static_cast<std::size_t>(node)];
  if (s.orders.drawn_all()) {
    // Every example of the epoch has been observed (the node is not computing): close it.
    if (s.has_cached) {
      s.orders.place_middle(s.cached_id);
      s.has_cached = false;
    }
    if (balance_ == Balance::Mean)
      s.mean.end_epoch();
    else
      s.pair.reset();
    s.orders.advance();
  }
  const auto ids = s.orders.draw(out.size());
  std::copy(ids.begin(), ids.end(), out.begin());
  return static_cast<int>(ids.size());
}

void LocalBalanceOrder::observe(int node, std::span<const std::uint32_t> ids,
                                std::span<const float> per_example) {
  NodeState& s = nodes_[static_cast<std::size_t>(node)];
  for (std::size_t k = 0; k < ids.size(); ++k) {
    const auto g = per_example.subspan(k * dim_, dim_);
    if (balance_ == Balance::Mean) {
      if (s.mean.step(g))
        s.orders.place_front(ids[k]);
      else
        s.orders.place_back(ids[k]);
    } else if (!s.has_cached) {
      s.cached = as_vec(g);
      s.cached_id = ids[k];
      s.has_cached = true;
    } else {
      const bool first_front = s.pair.step({s.cached.data(), dim_}, g);
      s.orders.place_pair(s.cached_id, ids[k], first_front);
      s.has_cached = false;
    }
  }
}

std::span<const std::uint32_t> LocalBalanceOrder::epoch_order(int node, std::int64_t epoch) const {
  return nodes_[static_cast<std::size_t>(node)].orders.order_of(epoch);
}

std::size_t LocalBalanceOrder::state_bytes() const {
  std::size_t bytes = 0;
  for (const NodeState& s : nodes_)
    bytes += s.orders.state_bytes() + s.mean.state_bytes() + s.pair.state_bytes() +
             sizeof(float) * static_cast<std::size_t>(s.cached.size());
  return bytes;
}

} // namespace dtsim
