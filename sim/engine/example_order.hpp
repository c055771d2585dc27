// SPDX-License-Identifier: MIT
// ExampleOrder: the plug-in that decides in which order each node visits its examples.
#pragma once

#include "sim/core/sim_time.hpp"

#include <cstddef>
#include <cstdint>
#include <span>
#include <string>
#include <utility>
#include <vector>

namespace dtsim {

// A coordination message between an orderer's endpoints (nodes 0..n-1; coordinator n, or
// n + 1 when it runs on its own machine).
// It carries no payload through the engine: the orderer keeps the data it stands for, and
// the message puts its size and its arrival time on the simulated network.
struct OrderMessage {
  int src = -1;
  int dst = -1;
  std::int64_t tag = 0;
  std::int64_t arg = 0;
  std::int64_t wire_bytes = 0;
  SimTime sent_at;
};

// What the engine offers an orderer that coordinates nodes (CD-GraB). Engine thread only.
class OrderChannel {
public:
  virtual ~OrderChannel() = default;
  virtual SimTime now() const = 0;
  virtual int num_nodes() const = 0;
  // The coordinator endpoint: n, the parameter server's machine, or n + 1, a machine of its
  // own (ExampleOrder::separate_coordinator).
  virtual int coordinator() const = 0;
  // Sends `wire_bytes` from src to dst on the simulated network (the same sender links as the
  // algorithm's messages, so it queues behind them and they behind it). Delivered to
  // ExampleOrder::on_message at arrival. Counted in bytes_sent and in order_bytes.
  virtual void send(int src, int dst, std::int64_t wire_bytes, std::int64_t tag,
                    std::int64_t arg) = 0;
  // Calls ExampleOrder::on_timer(endpoint, tag) after `delay` (e.g. a coordinator's service).
  virtual void set_timer(int endpoint, SimTime delay, std::int64_t tag) = 0;
  // node's next order is ready: the gradient start that next_batch() deferred goes ahead now.
  // requires: node is waiting (next_batch returned 0 for it and it was not released since).
  virtual void release(int node) = 0;
};

// One object orders all nodes' examples for a run. Contract:
// - next_batch (engine thread) hands out node's example ids. A batch never mixes two local
//   epochs except for orderers that say so (`random`, `fixed` wrap like the original D-RR
//   sampler); returning 0 defers the node's gradient until release(node).
// - observe (inside node's gradient task, on a worker thread, only when
//   needs_per_example_grads()) sees the batch's per-example gradients; it touches only state
//   private to that node which the engine thread leaves alone while the node computes.
//   Inputs are fixed when the task starts, so results never depend on thread timing.
// - on_gradient_ready / on_message / on_timer run on the engine thread in event order.
class ExampleOrder {
public:
  virtual ~ExampleOrder() = default;
  virtual std::string describe() const = 0;
  virtual bool needs_per_example_grads() const { return false; }
  // True when the coordinator is a machine of its own (endpoint n + 1, its own link) rather
  // than the parameter server's (endpoint n, sharing the server's link).
  virtual bool separate_coordinator() const { return false; }

  // Writes up to out.size() example ids of node's data into `out`; returns how many (>= 1),
  // or 0 when the node's next epoch order is not known yet.
  virtual int next_batch(OrderChannel& channel, int node, std::span<std::uint32_t> out) = 0;
  // per_example: num_params x ids.size(), column-major, column k for ids[k].
  virtual void observe(int /*node*/, std::span<const std::uint32_t> /*ids*/,
                       std::span<const float> /*per_example*/) {}
  // After the algorithm handled node's gradient-ready event.
  virtual void on_gradient_ready(OrderChannel&, int /*node*/) {}
  // False where on_gradient_ready does nothing: the engine then neither calls nor times it,
  // which saves two clock reads per node-step (8% of the engine's own work, outside the
  // gradients and hooks, on a 1,024-node ring: perf, 2026-11-27). True by default, so that an
  // order added at run time is always called.
  virtual bool acts_on_gradient_ready() const { return true; }
  virtual void on_message(OrderChannel&, const OrderMessage&) {}
  virtual void on_timer(OrderChannel&, int /*endpoint*/, std::int64_t /*tag*/) {}

  // The order node executes (or executed) in its local epoch `epoch` (0-based): the current
  // epoch's order, or the previous one's; for other epochs the nearest of the two (nodes of
  // asynchronous runs drift apart). For the herding bound.
  virtual std::span<const std::uint32_t> epoch_order(int node, std::int64_t epoch) const = 0;
  // Bytes of ordering state (orders, running sums, caches, coordinator buffers).
  virtual std::size_t state_bytes() const = 0;
  // Extra /metrics columns (same names every row) and /nodes columns, like Algorithm's.
  virtual void add_metrics(std::vector<std::pair<std::string, double>>& /*columns*/) const {}
  virtual void
  add_node_columns(std::vector<std::pair<std::string, std::vector<double>>>& /*columns*/) const {}
};

} // namespace dtsim
