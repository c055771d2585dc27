// SPDX-License-Identifier: MIT
// Simulator: the event loop that runs one scenario in simulated time with real gradients.
#pragma once

#include "data/dataset.hpp"
#include "data/partition.hpp"
#include "models/model.hpp"
#include "sim/engine/algorithm.hpp"
#include "sim/engine/batched_gradients.hpp"
#include "sim/engine/context.hpp"
#include "sim/engine/engine_config.hpp"
#include "sim/engine/epoch_probe.hpp"
#include "sim/engine/evaluator.hpp"
#include "sim/engine/event_queue.hpp"
#include "sim/engine/example_order.hpp"
#include "sim/engine/gradient_slot.hpp"
#include "sim/engine/shared_buffer.hpp"
#include "sim/engine/trace_sink.hpp"
#include "sim/system/compute_time_model.hpp"
#include "sim/system/network_model.hpp"
#include "topologies/topology.hpp"

#include <chrono>
#include <cmath>
#include <memory>
#include <optional>
#include <vector>

namespace dtsim {

// A timing-only run (`model: {kind: none}`): the full event machinery (compute times,
// messages, queues, staleness, idle time) with no models, data or gradients in memory, for
// system studies at node counts whose models would not fit. Algorithms run their real
// control flow on empty vectors; messages are charged as if they carried `wire_params` floats.
struct TimingOnly {
  std::size_t wire_params = 0;
  std::int64_t train_size = 0; // examples per epoch, for the stop rule and evaluation schedule
};

// Everything a run is made of. The simulator borrows all of it for the run's duration.
// With `timing` set, train, test, partition, model and order are unused (may be null).
struct SimulationParts {
  const Dataset* train = nullptr;
  const Dataset* test = nullptr;
  const Partition* partition = nullptr;
  const Model* model = nullptr;
  const Topology* topology = nullptr;
  ComputeTimeModel* compute = nullptr;
  NetworkModel* network = nullptr;
  Algorithm* algorithm = nullptr;
  TraceSink* trace = nullptr;
  ExampleOrder* order = nullptr; // the nodes' example orders (required unless timing-only)
  const TimingOnly* timing = nullptr;
  // model.backend cpu-batched or cuda: gradients run in batches on this backend instead of
  // as one task per node (null: per-node tasks).
  BatchedGradients* batched = nullptr;
};

struct RunResult {
  RunStatus status = RunStatus::Completed;
  std::string message;
  double sim_time_s = 0;
  double wall_seconds = 0;
  double epochs = 0;
  std::int64_t updates = 0;
  std::int64_t gradient_steps = 0;
  double final_test_accuracy = 0;
  double final_test_loss = 0;
  double gradient_wall_seconds = 0;       // forward/backward, summed over tasks (statistics only)
  double algorithm_task_wall_seconds = 0; // before/after_gradient hooks, summed over tasks
  double model_rebuild_wall_seconds = 0;  // stored models rebuilt from kept mixing inputs
  double eval_wall_seconds = 0;
  double order_wall_seconds = 0; // orderer work: in the tasks and on the engine thread
  double epoch_wall_seconds = 0; // per-epoch measurements (eval.per_epoch)
  std::int64_t evaluations = 0;  // /metrics rows
  std::int64_t events = 0;       // events handled by the loop
  std::vector<std::string> warnings;
  // Batched backends only (model.backend cpu-batched or cuda; empty otherwise): where the
  // gradients ran, the mean batch, and what crossed the bus and where the backend's time went.
  std::string gradient_backend;
  double gradient_batch_mean = 0;
  TransferStats bus;
};

// The single-threaded event loop; numeric work (gradients, evaluation) runs on oneTBB.
// Event order is (time, insertion order); results are identical for any thread count.
class Simulator final : public Context {
public:
  Simulator(const SimulationParts& parts, EngineConfig config);
  ~Simulator() override;
  Simulator(const Simulator&) = delete;
  Simulator& operator=(const Simulator&) = delete;

  // Runs to the stop rule, divergence or interruption. `header` is completed with the run's
  // facts (sizes, memory) and written to the trace first.
  RunResult run(RunHeader header);

  // Context
  SimTime now() const override { return now_; }
  int num_nodes() const override { return nodes_; }
  std::size_t num_params() const override { return dim_; }
  const Topology& topology() const override { return *parts_.topology; }
  std::span<float> params(int node) override;
  std::span<const float> params_view(int node) const override;
  std::span<const float> common_model() const override;
  void mean_of_models(std::span<float> out) const override;
  bool computing(int node) const override;
  void start_gradient(int node, std::int64_t tag) override;
  SharedBuffer new_buffer() override { return pool_.acquire(); }
  void send(int src, int dst, const MessageInfo& info, SharedBuffer payload,
            std::int64_t wire_bytes) override;
  void set_timer(int node, SimTime delay, std::int32_t tag) override;
  Rng& rng(int node) override;
  void record_update(int node, std::int64_t staleness, SimTime waited, bool held) override;
  void record_idle(int node, SimTime waited) override;

private:
  struct NodeStats {
    std::int64_t updates = 0;
    std::int64_t gradient_steps = 0;
    double compute_s = 0;
    double idle_s = 0;
    std::int64_t bytes_sent = 0;
    std::int64_t bytes_received = 0;
    std::int64_t messages_sent = 0;
  };

  // The engine side of the orderer's coordination channel.
  class Channel final : public OrderChannel {
  public:
    explicit Channel(Simulator& sim) : sim_(sim) {}
    SimTime now() const override { return sim_.now_; }
    int num_nodes() const override { return sim_.nodes_; }
    int coordinator() const override {
      return sim_.nodes_ + (sim_.order_->separate_coordinator() ? 1 : 0);
    }
    void send(int src, int dst, std::int64_t wire_bytes, std::int64_t tag,
              std::int64_t arg) override;
    void set_timer(int endpoint, SimTime delay, std::int64_t tag) override;
    void release(int node) override;

  private:
    Simulator& sim_;
  };

  void handle(const Event& e);
  // Draws node's batch from the orderer and launches its task; false if the orderer defers.
  bool launch_gradient(int node);
  void start_timing_gradient(int node, std::int64_t tag);
  // Joins node's finished gradient: its result and how many examples it used.
  GradientResult finish_gradient(int node, int& count);
  bool timing_only() const { return parts_.timing != nullptr; }
  double train_size() const;
  double final_accuracy() const { return timing_only() ? std::nan("") : last_accuracy_; }
  double final_loss() const { return timing_only() ? std::nan("") : last_loss_; }
  void on_gradient_ready(const Event& e);
  void on_message_arrival(const Event& e);
  void on_order_message(const Event& e);
  void on_order_timer(const Event& e);
  void post_message(int src, int dst, const MessageInfo& info, SharedBuffer payload,
                    std::int64_t wire_bytes, EventKind kind);
  void measure_epoch();
  void evaluate();
  void stop(RunStatus status, std::string message);
  double fraction_done() const;
  double epochs() const;
  void report_progress(bool force);
  RunSummary summary() const;
  void push_work(SimTime t, EventKind kind, int node, int peer, std::int64_t arg);

  SimulationParts parts_;
  EngineConfig config_;
  int nodes_;
  std::size_t dim_;
  // dim x nodes: all models contiguous. With a resident backend, a copy of its models that
  // is made and refreshed (pull_models) before anything on the host reads it: empty until then.
  mutable Eigen::MatrixXf node_params_;
  ResidentVectors* resident_ = nullptr; // the backend keeps the models and messages
  // Resident: the batches run when the models were last pulled (a batch's mixing changes
  // them; one that runs after a pull, for a node whose slot nobody waited on, makes the copy
  // stale again).
  mutable std::int64_t pulled_batches_ = 0;
  mutable std::uint64_t pulled_model_writes_ = 0; // resident_->model_writes() at the pull
  mutable std::int64_t model_pulls_ = 0;          // every node model to the host, each time
  // The initial model, during the algorithm's start until it writes a model (params() here;
  // on a resident backend a step on a model row moves its model_writes() past the mark) or
  // starts a gradient (whose task or batch may write models).
  std::span<const float> common_model_;
  std::uint64_t common_model_writes_ = 0;
  std::int64_t backend_evaluated_models_ = 0; // models the gradients' backend scored
  // The pulled copy is stale until the first pull, and once a batch ran or a method's step
  // wrote a model since.
  bool models_stale() const {
    return resident_ && (node_params_.size() == 0 || batcher_->batches() != pulled_batches_ ||
                         resident_->model_writes() != pulled_model_writes_);
  }
  void pull_models() const;
  std::unique_ptr<TaskScratchPool> task_scratch_;    // null when timing-only or batched
  std::unique_ptr<GradientBatcher> batcher_;         // batched gradients only
  std::vector<std::unique_ptr<GradientSlot>> slots_; // empty when timing-only
  // Timing-only: the gradient in flight per node (no slot, no task).
  struct TimingGradient {
    SimTime started;
    SimTime duration;
    std::int64_t tag = 0;
    bool busy = false;
  };
  std::vector<TimingGradient> timing_gradients_;
  ExampleOrder* order_;          // null when timing-only
  bool order_acts_on_gradients_; // order_->acts_on_gradient_ready(), asked once
  Channel channel_;
  std::vector<char> deferred_; // start_gradient called, waiting for the orderer
  std::vector<SimTime> deferred_since_;
  // Models kept as their inputs (Algorithm::keep_model_inputs): the node's column of
  // node_params_ is stale and the algorithm holds what rebuilds it. settle_model() rebuilds
  // it before anything reads it. A rebuild costs what a task's mixing costs (it reads the
  // inputs again and writes the model; about 180 us per 0.94 MB model on the 2-core VM)
  // while a task on a working copy spares only the model's write-back and read for
  // ownership (40-90 us there, nothing when the models fit the last-level cache), so a
  // node's task runs on a copy only when the node's last interval between reads had at
  // least kTasksWorthKeeping tasks or the current one has reached that many. (Measured:
  // with 3, a 32-node run evaluated 20 times per epoch, 3 tasks per node between reads,
  // ran 10% slower than without copies; with 8 it runs as fast.)
  static constexpr std::int64_t kTasksWorthKeeping = 8;
  bool working_copies_ = false; // per-node tasks of an algorithm that can keep inputs
  mutable std::vector<char> model_kept_;
  mutable std::vector<std::int64_t> tasks_since_read_;
  mutable std::vector<std::int64_t> read_interval_; // tasks between the node's last two reads
  mutable std::int64_t model_rebuilds_ = 0;
  mutable double rebuild_wall_s_ = 0;
  std::int64_t tasks_on_working_copy_ = 0;
  void settle_model(int node) const;       // a read of the node's model
  void rebuild_kept_model(int node) const; // the same without counting a read
  void settle_models() const;              // every node, rebuilds in parallel
  // Before an evaluation or epoch probe reads the models: every task done (before_gradient
  // hooks included), kept models rebuilt (a resident backend's models are pulled by the
  // first params_view that needs them).
  void settle_for_reading();
  // The evaluations' consensus distance, computed where the models are.
  double consensus_of_models();
  // Every node model's accuracy and loss on eval.per_node_samples test examples, into
  // node_results_ (where the models are, if their backend can; else by the gradients'
  // backend where it can, a device; else on the host).
  void evaluate_node_models();
  // The averaged model's loss and accuracy on the test examples (eval.test_samples), on the
  // gradients' backend where it can (a device), else on the host.
  EvalResult evaluate_averaged_model();
  // Host models scored on the first `count` test examples by the gradients' backend (a
  // device), counted in backend_evaluated_models_; false where it does not.
  bool backend_evaluates(std::span<const std::span<const float>> models, std::size_t count,
                         std::span<EvalResult> out);
  // Engine thread, before node's task starts: whether it runs on a working copy.
  bool run_on_working_copy(int node);
  std::unique_ptr<EpochProbe> probe_; // eval.per_epoch only
  std::vector<Rng> algorithm_rngs_;
  std::vector<NodeStats> stats_;
  EventQueue queue_;
  BufferPool pool_;
  std::vector<Message> messages_; // in flight, indexed by the event's arg
  std::vector<std::int64_t> free_messages_;
  std::optional<Evaluator> evaluator_; // none when timing-only
  Vec eval_model_;
  Vec average_model_;
  std::vector<EvalResult> node_results_;
  std::vector<std::span<const float>> node_views_;

  SimTime now_;
  std::int64_t pending_work_ = 0; // gradient, message and timer events not yet handled
  std::int64_t samples_ = 0;
  std::int64_t gradient_steps_ = 0;
  std::int64_t updates_ = 0;
  std::int64_t bytes_sent_ = 0;
  std::int64_t order_bytes_ = 0;
  std::int64_t epochs_measured_ = 0;
  std::int64_t evaluations_ = 0;
  std::int64_t progress_evaluations_ = 0; // progress thresholds crossed so far
  double loss_sum_since_eval_ = 0;
  std::int64_t losses_since_eval_ = 0;
  double staleness_sum_since_eval_ = 0;
  std::int64_t stale_updates_since_eval_ = 0;
  std::vector<std::int64_t> staleness_histogram_;
  SimTime last_eval_time_ = SimTime::from_ns(-1);
  double last_accuracy_ = -1;
  double last_loss_ = 0;
  double last_train_loss_ = -1; // for the progress line
  bool stopped_ = false;
  RunStatus status_ = RunStatus::Completed;
  std::string status_message_;
  double gradient_wall_s_ = 0;
  double hooks_wall_s_ = 0;
  double eval_wall_s_ = 0;
  double order_task_wall_s_ = 0;
  double order_engine_wall_s_ = 0;
  double epoch_wall_s_ = 0;
  std::vector<std::span<const float>> epoch_models_;
  std::vector<std::span<const std::uint32_t>> epoch_orders_;
  std::chrono::steady_clock::time_point wall_start_;
  std::chrono::steady_clock::time_point last_progress_;
};

} // namespace dtsim
