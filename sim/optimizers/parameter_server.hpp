// SPDX-License-Identifier: MIT
// Parameter-server protocol shared by asgd, ssgd, dc-asgd and gsgm: workers, FIFO service.
#pragma once

#include "sim/engine/algorithm.hpp"
#include "sim/optimizers/algorithm_setup.hpp"
#include "sim/optimizers/lr_schedule.hpp"

#include <deque>
#include <vector>

namespace dtsim {

// Workers pull the server model, compute a gradient on it and push it; each worker waits for
// the server's reply before its next gradient (its idle time is recorded).
// The server serves arrived gradients one at a time in arrival order. `eligible(worker)`
// lets a scheduler hold a worker's gradients: the server then serves the first eligible
// entry, and held ones keep their place in the FIFO. Serving takes `server.update_s`
// simulated seconds (default 0: applied on arrival), so a busy server adds queueing delay
// and staleness. Keys: lr (> 0, default 0.05), lr_schedule (LrSchedule; the position is the
// epochs served so far: gradients served * batch / training examples, and /metrics gets the
// current rate as `lr`), weight_decay (>= 0, 0), server: {update_s}.
// The copies of worker models and gradients run in the workers' gradient tasks; the
// server's math runs on the engine thread, as one server would. On a resident backend
// (methods with has_resident_step(): ASGD, DC-ASGD, GSGM, SSGD) the server's
// vectors stay there, a gradient stays in its worker's row until served, and the pulls,
// the server's steps and the replies are queued steps (ResidentVectors::apply).
class ParameterServer : public Algorithm {
public:
  void start(Context& ctx) final;
  void on_gradient(Context& ctx, int node, const GradientResult& r) final;
  void on_message(Context& ctx, const Message& msg) final;
  void on_timer(Context& ctx, int node, std::int32_t tag) final;
  void before_gradient(int node, std::span<float> x) final;
  void after_gradient(int node, std::span<const float> x, std::span<float> grad) final;
  bool reads_gradient_after_task() const override { return false; } // used in the task
  bool attach_resident(ResidentVectors& vectors) override;
  bool can_attach_resident() const override { return has_resident_step(); }
  void eval_model(const Context& ctx, std::span<float> out) const final;
  bool has_node_models() const final { return false; }
  void add_node_columns(std::vector<std::pair<std::string, std::vector<double>>>& c) const override;
  void add_metrics(std::vector<std::pair<std::string, double>>& columns) const override;
  std::size_t state_bytes() const override;

  static constexpr std::int32_t kGradient = 1;
  static constexpr std::int32_t kModel = 2;

protected:
  ParameterServer(const Params& p, const AlgorithmSetup& setup);

  // Serves one gradient from `worker` computed on server version `tau`. The implementation
  // updates w_ (and version_), calls ctx.record_update, and calls reply() for the worker
  // now or later (a synchronous server replies at the end of its round).
  virtual void apply(Context& ctx, int worker, std::span<const float> g, std::int64_t tau) = 0;
  // False while the worker's gradients must wait (a scheduler's white list).
  virtual bool eligible(int /*worker*/) const { return true; }
  // Whether apply() can queue its step on a resident backend (resident()); the method then
  // frees its host state in release_host_state().
  virtual bool has_resident_step() const { return false; }
  virtual void release_host_state() {}
  ResidentVectors* resident() const { return resident_; }
  // Called at start, after w_ holds the initial model (on a resident backend w_ is empty:
  // the backend's server vector holds it).
  virtual void on_start(Context&) {}
  void reply(Context& ctx, int worker);
  // ctx.record_update with the served gradient's queueing time and hold flag.
  void record_update(Context& ctx, int worker, std::int64_t staleness);
  std::string describe_server() const; // ", server update 5 ms" and the lr schedule, or ""

  int nodes_;
  LrSchedule schedule_;
  float lr_; // the rate for the gradient being served
  float weight_decay_;
  Vec w_;
  std::int64_t version_ = 0;

private:
  struct Worker {
    SimTime wait_start;
    SharedBuffer pulled; // the server model to copy into x when the next task starts
    SharedBuffer out;    // the gradient, copied in the worker's task
    double held_updates = 0;
    double server_wait_s = 0; // arrival at the server -> start of service
  };
  struct Pending {
    int worker = -1;
    SharedBuffer g;
    std::int64_t tau = 0;
    SimTime arrival;
    bool held = false; // passed over at least once by the scheduler
  };
  void serve(Context& ctx);
  void finish_service(Context& ctx, Pending& p);

  double batch_size_ = 0;
  std::int64_t served_ = 0; // gradients served so far
  double service_s_ = 0;
  SimTime service_;
  std::vector<Worker> workers_;
  std::deque<Pending> queue_;
  Pending in_service_;
  SimTime serving_wait_; // of the gradient being applied
  bool serving_held_ = false;
  bool busy_ = false;
  ResidentVectors* resident_ = nullptr;
};

} // namespace dtsim
