// SPDX-License-Identifier: MIT
// Drives an ExampleOrder like a synchronous engine would, without the simulator.
#pragma once

#include "models/model.hpp"
#include "sim/engine/example_order.hpp"

#include <deque>
#include <functional>
#include <map>
#include <vector>

namespace dtsim::testing {

// A model stub with `dim` parameters that claims per-example support (orderers read only
// num_params() and supports_per_example_grads()).
class StubModel final : public Model {
public:
  explicit StubModel(std::size_t dim, bool per_example = true)
      : dim_(dim), per_example_(per_example) {}
  std::string describe() const override { return "stub"; }
  std::size_t num_params() const override { return dim_; }
  void init(std::span<float>, Rng&) const override {}
  std::unique_ptr<Workspace> make_workspace(int) const override { return nullptr; }
  double loss_and_grad(std::span<const float>, const BatchView&, std::span<float>,
                       Workspace&) const override {
    return 0;
  }
  EvalResult evaluate(std::span<const float>, const BatchView&, Workspace&) const override {
    return {};
  }
  double flops_per_example() const override { return 0; }
  bool supports_per_example_grads() const override { return per_example_; }

private:
  std::size_t dim_;
  bool per_example_;
};

// One round: every node without a batch draws one (next_batch; 0 = it waits); with
// `late_delivery`, the traffic of the previous round is delivered only now (so nodes at an
// epoch end wait and are released by the coordinator's signs); every node with a batch
// "computes" (observe, gradients from `gradient_of(id)`) and reports ready
// (on_gradient_ready) in node order; otherwise the traffic is delivered at the round's end.
// Messages and timers are delivered in FIFO order. Records every node's drawn ids.
class OrderHarness final : public OrderChannel {
public:
  using Gradient = std::function<std::vector<float>(std::uint32_t id)>;
  OrderHarness(ExampleOrder& order, int nodes, int batch, std::size_t dim, Gradient gradient_of)
      : order_(order), nodes_(nodes), batch_(batch), dim_(dim),
        gradient_of_(std::move(gradient_of)), drawn_(static_cast<std::size_t>(nodes)),
        batches_(static_cast<std::size_t>(nodes)) {}

  SimTime now() const override { return SimTime::from_ns(clock_ns_); }
  int num_nodes() const override { return nodes_; }
  int coordinator() const override { return nodes_ + (order_.separate_coordinator() ? 1 : 0); }
  void send(int src, int dst, std::int64_t wire_bytes, std::int64_t tag,
            std::int64_t arg) override {
    bytes_ += wire_bytes;
    queue_.push_back({false, OrderMessage{src, dst, tag, arg, wire_bytes, now()}, 0, 0});
  }
  void set_timer(int endpoint, SimTime, std::int64_t tag) override {
    queue_.push_back({true, OrderMessage{}, endpoint, tag});
  }
  void release(int node) override {
    ++releases_;
    draw(node);
  }

  void round(bool late_delivery) {
    for (int j = 0; j < nodes_; ++j)
      draw(j);
    if (late_delivery)
      deliver();
    for (int j = 0; j < nodes_; ++j) {
      auto& b = batches_[static_cast<std::size_t>(j)];
      if (b.empty())
        continue;
      std::vector<float> per;
      for (std::uint32_t id : b) {
        const std::vector<float> g = gradient_of_(id);
        per.insert(per.end(), g.begin(), g.end());
      }
      order_.observe(j, b, per);
    }
    for (int j = 0; j < nodes_; ++j)
      if (!batches_[static_cast<std::size_t>(j)].empty()) {
        order_.on_gradient_ready(*this, j);
        batches_[static_cast<std::size_t>(j)].clear();
      }
    if (!late_delivery)
      deliver();
  }

  void deliver() {
    while (!queue_.empty()) {
      const Item it = queue_.front();
      queue_.pop_front();
      ++clock_ns_;
      if (it.timer)
        order_.on_timer(*this, it.endpoint, it.tag);
      else
        order_.on_message(*this, it.msg);
    }
  }

  // Every id node drew, in order.
  const std::vector<std::uint32_t>& drawn(int node) const {
    return drawn_[static_cast<std::size_t>(node)];
  }
  std::int64_t bytes() const { return bytes_; }
  int releases() const { return releases_; }

private:
  struct Item {
    bool timer;
    OrderMessage msg;
    int endpoint;
    std::int64_t tag;
  };
  void draw(int j) {
    auto& b = batches_[static_cast<std::size_t>(j)];
    if (!b.empty())
      return;
    std::vector<std::uint32_t> out(static_cast<std::size_t>(batch_));
    const int n = order_.next_batch(*this, j, out);
    out.resize(static_cast<std::size_t>(n));
    b = out;
    auto& d = drawn_[static_cast<std::size_t>(j)];
    d.insert(d.end(), out.begin(), out.end());
  }

  ExampleOrder& order_;
  int nodes_;
  int batch_;
  std::size_t dim_;
  Gradient gradient_of_;
  std::vector<std::vector<std::uint32_t>> drawn_;
  std::vector<std::vector<std::uint32_t>> batches_;
  std::deque<Item> queue_;
  std::int64_t clock_ns_ = 0;
  std::int64_t bytes_ = 0;
  int releases_ = 0;
};

} // namespace dtsim::testing
