// SPDX-License-Identifier: MIT
// A small stand-in for the Simulator: node models chosen by the test, scripted gradients.
#pragma once

#include "sim/core/flat_vector.hpp"
#include "sim/engine/algorithm.hpp"
#include "sim/engine/context.hpp"
#include "sim/engine/event_queue.hpp"
#include "sim/engine/shared_buffer.hpp"
#include "topologies/topology.hpp"

#include <functional>
#include <vector>

namespace dtsim::testing {

// Drives one Algorithm through gradient, message and timer events, single-threaded: hooks
// run when a gradient starts. Node models start as the test sets them (not one common
// model), gradients come from `gradient` (default zero), compute times are `compute_s`
// (constant) or exponential with that mean, and every message takes `latency_s`.
class ScriptedContext final : public Context {
public:
  ScriptedContext(const Topology& t, std::size_t dim, std::uint64_t seed)
      : topology_(t), dim_(dim), models_(static_cast<Eigen::Index>(dim), t.size()), pool_(dim) {
    models_.setZero();
    for (int i = 0; i <= t.size(); ++i) {
      rngs_.push_back(Rng::stream(seed, "algorithm", static_cast<std::uint64_t>(i)));
      compute_rngs_.push_back(Rng::stream(seed, "compute", static_cast<std::uint64_t>(i)));
    }
    grads_.assign(static_cast<std::size_t>(t.size()), Vec::Zero(static_cast<Eigen::Index>(dim)));
    computing_.assign(static_cast<std::size_t>(t.size()), false);
    tags_.assign(static_cast<std::size_t>(t.size()), 0);
    started_.assign(static_cast<std::size_t>(t.size()), SimTime());
    updates.assign(static_cast<std::size_t>(t.size()), 0);
    idle_s.assign(static_cast<std::size_t>(t.size()), 0.0);
  }

  // Runs algorithm.start and then events until simulated time `until_s`.
  void run(Algorithm& algorithm, double until_s) {
    algorithm_ = &algorithm;
    algorithm.start(*this);
    const SimTime until = SimTime::from_seconds(until_s);
    while (!queue_.empty() && queue_.top().time <= until) {
      const Event e = queue_.pop();
      now_ = e.time;
      if (e.kind == EventKind::GradientReady) {
        computing_[idx(e.node)] = false;
        ++gradient_steps;
        algorithm.on_gradient(*this, e.node,
                              GradientResult{{grads_[idx(e.node)].data(), dim_},
                                             0.0,
                                             tags_[idx(e.node)],
                                             started_[idx(e.node)]});
      } else if (e.kind == EventKind::MessageArrival) {
        --in_flight;
        const Message m = messages_[static_cast<std::size_t>(e.arg)];
        messages_[static_cast<std::size_t>(e.arg)] = Message();
        algorithm.on_message(*this, m);
      } else if (e.kind == EventKind::Timer) {
        algorithm.on_timer(*this, e.node, static_cast<std::int32_t>(e.arg));
      }
      last_event = e;
      if (after_event)
        after_event();
    }
  }

  SimTime now() const override { return now_; }
  int num_nodes() const override { return topology_.size(); }
  std::size_t num_params() const override { return dim_; }
  const Topology& topology() const override { return topology_; }
  std::span<float> params(int node) override { return {models_.col(node).data(), dim_}; }
  std::span<const float> params_view(int node) const override {
    return {models_.col(node).data(), dim_};
  }
  bool computing(int node) const override { return computing_[idx(node)]; }
  void start_gradient(int node, std::int64_t tag) override {
    const std::span<float> x = params(node);
    algorithm_->before_gradient(node, x);
    Vec& g = grads_[idx(node)];
    if (gradient)
      gradient(node, x, {g.data(), dim_});
    else
      g.setZero();
    algorithm_->after_gradient(node, x, {g.data(), dim_});
    computing_[idx(node)] = true;
    tags_[idx(node)] = tag;
    started_[idx(node)] = now_;
    const double t = exponential ? compute_rngs_[idx(node)].exponential(compute_s) : compute_s;
    queue_.push(now_ + SimTime::from_seconds(t), EventKind::GradientReady, node);
  }
  SharedBuffer new_buffer() override { return pool_.acquire(); }
  void send(int src, int dst, const MessageInfo& info, SharedBuffer payload,
            std::int64_t wire_bytes) override {
    messages_.push_back(Message{src, dst, info, std::move(payload), wire_bytes, now_});
    bytes_sent += wire_bytes;
    ++in_flight;
    queue_.push(now_ + SimTime::from_seconds(latency_s), EventKind::MessageArrival, dst, src,
                static_cast<std::int64_t>(messages_.size() - 1));
  }
  void set_timer(int node, SimTime delay, std::int32_t tag) override {
    queue_.push(now_ + delay, EventKind::Timer, node, -1, tag);
  }
  Rng& rng(int node) override { return rngs_[idx(node)]; }
  void record_update(int node, std::int64_t staleness, SimTime, bool) override {
    ++updates[idx(node)];
    if (staleness >= 0)
      max_staleness = std::max(max_staleness, staleness);
  }
  void record_idle(int node, SimTime waited) override { idle_s[idx(node)] += waited.seconds(); }

  // Test settings.
  std::function<void(int, std::span<const float>, std::span<float>)> gradient;
  double compute_s = 0.01;
  bool exponential = true;
  double latency_s = 0.002;
  std::function<void()> after_event; // e.g. an invariant to check after every event
  // What happened.
  Event last_event;
  std::vector<std::int64_t> updates;
  std::vector<double> idle_s;
  std::int64_t gradient_steps = 0;
  std::int64_t bytes_sent = 0;
  std::int64_t max_staleness = -1;
  int in_flight = 0; // messages sent and not yet delivered

private:
  static std::size_t idx(int node) { return static_cast<std::size_t>(node); }
  const Topology& topology_;
  std::size_t dim_;
  Eigen::MatrixXf models_;
  BufferPool pool_;
  EventQueue queue_;
  std::vector<Message> messages_;
  std::vector<Rng> rngs_, compute_rngs_;
  std::vector<Vec> grads_;
  std::vector<bool> computing_;
  std::vector<std::int64_t> tags_;
  std::vector<SimTime> started_;
  SimTime now_;
  Algorithm* algorithm_ = nullptr;
};

} // namespace dtsim::testing
