// SPDX-License-Identifier: MIT
// A small deterministic Context for algorithm unit tests: per-node initial models, a given
// gradient function, fixed compute and link times, and a step limit.
#pragma once

#include "sim/core/errors.hpp"
#include "sim/core/flat_vector.hpp"
#include "sim/engine/algorithm.hpp"
#include "sim/engine/context.hpp"
#include "topologies/topology.hpp"

#include <functional>
#include <map>
#include <utility>
#include <vector>

namespace dtsim::testing {

// Runs an Algorithm without the engine, data or models. A gradient task runs at once
// (before_gradient, the gradient function, after_gradient: the same order as the engine's
// task, whose inputs are fixed at its start); its ready event comes compute_s later.
// Messages arrive latency_s after they are sent. Events at the same time run in scheduling
// order. After `steps` gradients per node, a node's next start_gradient only applies
// before_gradient (so the mixing of its last round lands in its model) and parks the node.
class RoundContext final : public Context {
public:
  using GradientFn = std::function<void(int node, std::span<const float> x, std::span<float> g)>;

  RoundContext(const Topology& topology, std::vector<Vec> initial, GradientFn gradient)
      : topology_(topology), dim_(static_cast<std::size_t>(initial.at(0).size())), pool_(dim_),
        gradient_(std::move(gradient)), compute_s_(initial.size(), 1.0),
        started_(initial.size(), 0), busy_(initial.size(), false),
        grad_(initial.size(), Vec::Zero(initial[0].size())) {
    params_.resize(static_cast<Eigen::Index>(dim_), static_cast<Eigen::Index>(initial.size()));
    for (std::size_t i = 0; i < initial.size(); ++i)
      params_.col(static_cast<Eigen::Index>(i)) = initial[i];
    for (std::size_t i = 0; i <= initial.size(); ++i)
      rngs_.push_back(Rng::stream(7, "algorithm", i));
  }

  // Simulated seconds per gradient of each node (default 1 s each).
  void set_compute_s(std::vector<double> s) { compute_s_ = std::move(s); }
  void set_latency_s(double s) { latency_s_ = s; }

  // Starts the algorithm and runs until every node has done `steps` gradients and applied
  // the mixing that follows the last one.
  void run(Algorithm& alg, int steps) {
    alg_ = &alg;
    steps_ = steps;
    alg.start(*this);
    while (!events_.empty()) {
      auto it = events_.begin();
      Event e = std::move(it->second);
      now_ = SimTime::from_ns(it->first.first);
      events_.erase(it);
      if (e.is_message) {
        alg.on_message(*this, e.message);
      } else {
        busy_[index(e.node)] = false;
        alg.on_gradient(*this, e.node, GradientResult{span_of(grad_[index(e.node)]), 0, 0, {}});
      }
    }
  }

  std::span<const float> model(int node) const { return params_view(node); }
  const std::vector<std::int64_t>& message_bytes() const { return bytes_; }
  std::int64_t updates() const { return updates_; }
  double idle_s(int node) const { return idle_.empty() ? 0 : idle_[index(node)]; }

  // Context.
  SimTime now() const override { return now_; }
  int num_nodes() const override { return static_cast<int>(params_.cols()); }
  std::size_t num_params() const override { return dim_; }
  const Topology& topology() const override { return topology_; }
  std::span<float> params(int node) override {
    DTSIM_ASSERT(!busy_[index(node)], "params() of a computing node");
    return {params_.col(node).data(), dim_};
  }
  std::span<const float> params_view(int node) const override {
    return {params_.col(node).data(), dim_};
  }
  bool computing(int node) const override { return busy_[index(node)]; }
  void start_gradient(int node, std::int64_t) override {
    DTSIM_ASSERT(!busy_[index(node)], "start_gradient() of a computing node");
    std::span<float> x{params_.col(node).data(), dim_};
    alg_->before_gradient(node, x);
    if (started_[index(node)] == steps_)
      return; // parked: the last round's mixing is in x
    ++started_[index(node)];
    gradient_(node, x, span_of(grad_[index(node)]));
    alg_->after_gradient(node, x, span_of(grad_[index(node)]));
    busy_[index(node)] = true;
    push(now_ + SimTime::from_seconds(compute_s_[index(node)]), Event{false, node, {}});
  }
  SharedBuffer new_buffer() override { return pool_.acquire(); }
  void send(int src, int dst, const MessageInfo& info, SharedBuffer payload,
            std::int64_t wire_bytes) override {
    if (wire_bytes < 0)
      wire_bytes = static_cast<std::int64_t>(payload.view().size() * sizeof(float)) + 64;
    bytes_.push_back(wire_bytes);
    Message m{src, dst, info, std::move(payload), wire_bytes, now_};
    push(now_ + SimTime::from_seconds(latency_s_), Event{true, dst, std::move(m)});
  }
  void set_timer(int, SimTime, std::int32_t) override { DTSIM_ASSERT(false, "no timers here"); }
  Rng& rng(int node) override { return rngs_[index(node)]; }
  void record_update(int, std::int64_t, SimTime, bool) override { ++updates_; }
  void record_idle(int node, SimTime waited) override {
    idle_.resize(static_cast<std::size_t>(num_nodes()), 0.0);
    idle_[index(node)] += waited.seconds();
  }

private:
  struct Event {
    bool is_message = false;
    int node = 0;
    Message message;
  };
  static std::size_t index(int node) { return static_cast<std::size_t>(node); }
  std::span<float> span_of(Vec& v) const { return {v.data(), dim_}; }
  void push(SimTime t, Event e) { events_.emplace(std::make_pair(t.ns(), seq_++), std::move(e)); }

  const Topology& topology_;
  std::size_t dim_;
  BufferPool pool_;
  GradientFn gradient_;
  Eigen::MatrixXf params_;
  std::vector<double> compute_s_;
  double latency_s_ = 0.001;
  std::vector<int> started_;
  std::vector<bool> busy_;
  std::vector<Vec> grad_;
  std::vector<Rng> rngs_;
  std::vector<std::int64_t> bytes_;
  std::vector<double> idle_;
  std::map<std::pair<std::int64_t, std::uint64_t>, Event> events_;
  std::uint64_t seq_ = 0;
  SimTime now_;
  Algorithm* alg_ = nullptr;
  int steps_ = 0;
  std::int64_t updates_ = 0;
};

} // namespace dtsim::testing
