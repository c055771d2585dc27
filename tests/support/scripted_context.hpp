// SPDX-License-Identifier: MIT
// A stand-in for the Simulator in algorithm unit tests: node models chosen by the test,
// a given gradient function, scripted compute and link times.
#pragma once

#include "sim/core/errors.hpp"
#include "sim/core/flat_vector.hpp"
#include "sim/engine/algorithm.hpp"
#include "sim/engine/context.hpp"
#include "sim/engine/event_queue.hpp"
#include "sim/engine/message.hpp"
#include "sim/engine/shared_buffer.hpp"
#include "topologies/topology.hpp"

#include <algorithm>
#include <functional>
#include <limits>
#include <utility>
#include <vector>

namespace dtsim::testing {

// Compute and link times. Compute: `compute_s` per gradient on every node, or drawn from an
// exponential with that mean from each node's "compute" stream; set_compute_s() gives each
// node its own constant time instead.
struct ScriptedTiming {
  double compute_s = 1.0;
  bool exponential = false;
  double latency_s = 0.001;
};

// Drives one Algorithm without the engine, data or models, single-threaded. A gradient task
// runs at once when it starts (before_gradient, the gradient function, after_gradient: the
// engine task's order, whose inputs are fixed at its start); its ready event comes one
// compute time later. Every message takes latency_s. Events at the same time run in
// scheduling order (the engine's EventQueue). Gradients are zero unless `gradient` is set.
class ScriptedContext final : public Context {
public:
  using GradientFn = std::function<void(int node, std::span<const float> x, std::span<float> g)>;

  // Node models start at zero (tests may write them through params()).
  ScriptedContext(const Topology& t, std::size_t dim, std::uint64_t seed = 7,
                  ScriptedTiming timing = {})
      : topology_(t), dim_(dim), timing_(timing), models_(static_cast<Eigen::Index>(dim), t.size()),
        pool_(dim) {
    models_.setZero();
    const auto n = static_cast<std::size_t>(t.size());
    for (std::size_t i = 0; i <= n; ++i) {
      rngs_.push_back(Rng::stream(seed, "algorithm", i));
      compute_rngs_.push_back(Rng::stream(seed, "compute", i));
    }
    grads_.assign(n, Vec::Zero(static_cast<Eigen::Index>(dim)));
    node_compute_s_.assign(n, timing.compute_s);
    computing_.assign(n, false);
    tags_.assign(n, 0);
    started_.assign(n, SimTime());
    steps_started_.assign(n, 0);
    updates.assign(n, 0);
    idle_s.assign(n, 0.0);
  }
  // Node i's model starts at initial[i]; gradients come from `g`.
  ScriptedContext(const Topology& t, const std::vector<Vec>& initial, GradientFn g,
                  std::uint64_t seed = 7, ScriptedTiming timing = {})
      : ScriptedContext(t, static_cast<std::size_t>(initial.at(0).size()), seed, timing) {
    DTSIM_ASSERT(static_cast<int>(initial.size()) == t.size(), "one initial model per node");
    for (std::size_t i = 0; i < initial.size(); ++i)
      models_.col(static_cast<Eigen::Index>(i)) = initial[i];
    gradient = std::move(g);
  }

  // Constant simulated seconds per gradient, one value per node.
  void set_compute_s(std::vector<double> per_node) {
    DTSIM_ASSERT(static_cast<int>(per_node.size()) == num_nodes(), "one compute time per node");
    node_compute_s_ = std::move(per_node);
    timing_.exponential = false;
  }

  // Starts the algorithm and runs events up to simulated time until_s.
  void run_for(Algorithm& algorithm, double until_s) {
    run(algorithm, SimTime::from_seconds(until_s), std::numeric_limits<int>::max());
  }
  // Starts the algorithm and runs until every node has done `steps` gradients and applied
  // what follows the last one: a node's next start_gradient then only applies
  // before_gradient (so the mixing of its last round lands in its model) and parks it.
  void run_steps(Algorithm& algorithm, int steps) {
    run(algorithm, SimTime::from_ns(std::numeric_limits<std::int64_t>::max()), steps);
  }

  std::span<const float> model(int node) const { return params_view(node); }

  // Context.
  SimTime now() const override { return now_; }
  int num_nodes() const override { return topology_.size(); }
  std::size_t num_params() const override { return dim_; }
  const Topology& topology() const override { return topology_; }
  std::span<float> params(int node) override {
    DTSIM_ASSERT(!computing_[idx(node)], "params() of a computing node");
    offer_common_model = false; // as the engine: the caller may write it
    return {models_.col(node).data(), dim_};
  }
  std::span<const float> params_view(int node) const override {
    return {models_.col(node).data(), dim_};
  }
  // With offer_common_model (a test that made every model the same), node 0's model until
  // the algorithm's start returns, writes a model or starts a gradient, as the engine offers
  // its initial model.
  std::span<const float> common_model() const override {
    if (!offer_common_model)
      return {};
    return {models_.col(0).data(), dim_};
  }
  bool offer_common_model = false;
  bool computing(int node) const override { return computing_[idx(node)]; }
  void start_gradient(int node, std::int64_t tag) override {
    DTSIM_ASSERT(!computing_[idx(node)], "start_gradient() of a computing node");
    offer_common_model = false; // its hooks run now, on the model
    const std::span<float> x{models_.col(node).data(), dim_};
    algorithm_->before_gradient(node, x);
    if (steps_started_[idx(node)] == step_limit_)
      return; // parked
    ++steps_started_[idx(node)];
    Vec& g = grads_[idx(node)];
    if (gradient)
      gradient(node, x, {g.data(), dim_});
    else
      g.setZero();
    algorithm_->after_gradient(node, x, {g.data(), dim_});
    computing_[idx(node)] = true;
    tags_[idx(node)] = tag;
    started_[idx(node)] = now_;
    const double mean = node_compute_s_[idx(node)];
    const double t = timing_.exponential ? compute_rngs_[idx(node)].exponential(mean) : mean;
    queue_.push(now_ + SimTime::from_seconds(t), EventKind::GradientReady, node);
  }
  SharedBuffer new_buffer() override { return pool_.acquire(); }
  void send(int src, int dst, const MessageInfo& info, SharedBuffer payload,
            std::int64_t wire_bytes) override {
    if (wire_bytes < 0) // as the Simulator: dense float32 plus the envelope
      wire_bytes = static_cast<std::int64_t>(payload ? payload.view().size() * sizeof(float) : 0) +
                   kMessageHeaderBytes;
    messages_.push_back(Message{src, dst, info, std::move(payload), wire_bytes, now_});
    message_bytes.push_back(wire_bytes);
    bytes_sent += wire_bytes;
    ++in_flight;
    queue_.push(now_ + SimTime::from_seconds(timing_.latency_s), EventKind::MessageArrival, dst,
                src, static_cast<std::int64_t>(messages_.size() - 1));
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
  GradientFn gradient;
  std::function<void()> after_event; // e.g. an invariant to check after every event
  // What happened.
  Event last_event;
  std::vector<std::int64_t> updates; // record_update calls per node
  std::vector<double> idle_s;        // record_idle sums per node
  std::vector<std::int64_t> message_bytes;
  std::int64_t gradient_steps = 0;
  std::int64_t bytes_sent = 0;
  std::int64_t max_staleness = -1;
  int in_flight = 0; // messages sent and not yet delivered

private:
  static std::size_t idx(int node) { return static_cast<std::size_t>(node); }

  void run(Algorithm& algorithm, SimTime until, int step_limit) {
    algorithm_ = &algorithm;
    step_limit_ = step_limit;
    algorithm.start(*this);
    offer_common_model = false;
    while (!queue_.empty() && queue_.next_time() <= until) {
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
        const Message m = std::move(messages_[static_cast<std::size_t>(e.arg)]);
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

  const Topology& topology_;
  std::size_t dim_;
  ScriptedTiming timing_;
  Eigen::MatrixXf models_;
  BufferPool pool_;
  EventQueue queue_;
  std::vector<Message> messages_;
  std::vector<Rng> rngs_, compute_rngs_;
  std::vector<Vec> grads_;
  std::vector<double> node_compute_s_;
  std::vector<bool> computing_;
  std::vector<std::int64_t> tags_;
  std::vector<SimTime> started_;
  std::vector<int> steps_started_;
  int step_limit_ = std::numeric_limits<int>::max();
  SimTime now_;
  Algorithm* algorithm_ = nullptr;
};

} // namespace dtsim::testing
