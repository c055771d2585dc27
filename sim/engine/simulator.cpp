// SPDX-License-Identifier: MIT
// The event loop, gradient dispatch, message delivery, evaluation and the stop rule.
#include "sim/engine/simulator.hpp"

#include "sim/core/errors.hpp"
#include "sim/engine/consensus_distance.hpp"

#include <algorithm>
#include <cmath>
#include <limits>
#include <tbb/parallel_for.h>

namespace dtsim {
namespace {
constexpr std::size_t kStalenessBins = 257; // 0..255, last bin = ">= 256"
// Evaluation events: a periodic one (eval.every_s) schedules its successor; a progress one
// (eval.every_epochs / every_updates) is queued when the threshold is crossed.
constexpr std::int64_t kPeriodicEvaluation = 0;
constexpr std::int64_t kProgressEvaluation = 1;
// Below this many evaluations the stability measures of a curve are not meaningful.
constexpr std::int64_t kFewEvaluations = 20;

ExampleOrder* required_unless_timing(const SimulationParts& parts) {
  DTSIM_ASSERT(parts.timing != nullptr ||
                   (parts.order && parts.model && parts.train && parts.test && parts.partition),
               "SimulationParts: data, model and order are required unless timing-only");
  return parts.timing ? nullptr : parts.order;
}
} // namespace

Simulator::Simulator(const SimulationParts& parts, EngineConfig config)
    : parts_(parts), config_(std::move(config)), nodes_(parts.topology->size()),
      dim_(parts.timing ? 0 : parts.model->num_params()), order_(required_unless_timing(parts)),
      order_acts_on_gradients_(order_ && order_->acts_on_gradient_ready()), channel_(*this),
      deferred_(static_cast<std::size_t>(nodes_), 0),
      deferred_since_(static_cast<std::size_t>(nodes_)),
      model_kept_(static_cast<std::size_t>(nodes_), 0),
      tasks_since_read_(static_cast<std::size_t>(nodes_), 0),
      read_interval_(static_cast<std::size_t>(nodes_), 0), pool_(dim_),
      staleness_histogram_(kStalenessBins, 0) {
  if (timing_only()) {
    DTSIM_ASSERT(!config_.eval_per_epoch && !config_.eval_per_node,
                 "timing-only runs have no models to evaluate");
    timing_gradients_.resize(static_cast<std::size_t>(nodes_));
  } else {
    DTSIM_ASSERT(static_cast<int>(parts.partition->node_indices.size()) == nodes_,
                 "partition and topology disagree on the number of nodes");
    evaluator_.emplace(*parts.model, *parts.test,
                       static_cast<std::size_t>(config_.eval_test_samples));
  }
  if (!timing_only() && parts.batched) {
    DTSIM_ASSERT(!order_->needs_per_example_grads(),
                 "batched gradients have no per-example gradients for a balancing orderer");
    batcher_ = std::make_unique<GradientBatcher>(*parts.batched, nodes_);
    // A backend that can keep the vectors itself does so when the algorithm can queue its
    // math there; the messages are then ids only, as in timing-only runs.
    if (ResidentVectors* r = parts.batched->resident(); r != nullptr) {
      const bool attached = parts.algorithm->attach_resident(*r);
      // A device backend set its memory aside by can_attach_resident's answer.
      DTSIM_ASSERT(attached == parts.algorithm->can_attach_resident(),
                   "attach_resident and can_attach_resident disagree");
      if (attached) {
        resident_ = r;
        pool_ = BufferPool(0);
      }
    }
    for (int i = 0; i < nodes_; ++i)
      slots_.push_back(std::make_unique<GradientSlot>(*parts.model, config_.batch_size, *batcher_,
                                                      resident_ != nullptr));
  }
  // A resident backend's models come here only when something on the host reads them.
  if (!resident_)
    node_params_.resize(static_cast<Eigen::Index>(dim_), nodes_);
  if (!timing_only() && !parts.batched) {
    working_copies_ = config_.working_copies && parts.algorithm->can_keep_model_inputs();
    task_scratch_ = std::make_unique<TaskScratchPool>(
        *parts.model, parts.train->num_features(), config_.batch_size,
        !parts.algorithm->reads_gradient_after_task(), working_copies_);
    for (int i = 0; i < nodes_; ++i) {
      slots_.push_back(std::make_unique<GradientSlot>(
          *parts.model, *parts.train, config_.batch_size, *task_scratch_,
          parts.algorithm->reads_gradient_after_task()));
      // Only orderers that balance pay for the per-example buffers.
      if (order_->needs_per_example_grads())
        slots_.back()->enable_per_example();
    }
  }
  if (config_.eval_per_epoch)
    probe_ = std::make_unique<EpochProbe>(*parts.model, *parts.train, *parts.partition,
                                          config_.batch_size, config_.eval_herding_bound);
  for (int i = 0; i <= nodes_; ++i) // one more stream for the server endpoint
    algorithm_rngs_.push_back(
        Rng::stream(config_.seed, "algorithm", static_cast<std::uint64_t>(i)));
  stats_.resize(static_cast<std::size_t>(nodes_));
  eval_model_.resize(static_cast<Eigen::Index>(dim_));
  average_model_.resize(static_cast<Eigen::Index>(dim_));
  node_results_.resize(static_cast<std::size_t>(nodes_));
}

Simulator::~Simulator() {
  // Tasks read buffers this object owns: never let one outlive it (also on exceptions).
  // Batched gradients run on the engine thread only when joined: none is running now.
  for (auto& slot : slots_)
    if (slot->busy() && !batcher_) {
      try {
        slot->join();
      } catch (...) {
      }
    }
}

std::span<const float> Simulator::common_model() const {
  if (resident_ && resident_->model_writes() != common_model_writes_)
    return {};
  return common_model_;
}

std::span<float> Simulator::params(int node) {
  DTSIM_ASSERT(!computing(node), "params(node) written while its gradient is being computed");
  DTSIM_ASSERT(!resident_, "params(node) written in a run whose backend keeps the models");
  common_model_ = {}; // the caller may write it
  settle_model(node);
  return {node_params_.col(node).data(), dim_};
}

std::span<const float> Simulator::params_view(int node) const {
  // A running task may be rewriting the model (before_gradient): read it once it is done.
  if (!timing_only())
    slots_[static_cast<std::size_t>(node)]->wait();
  if (models_stale())
    pull_models();
  settle_model(node);
  return {node_params_.col(node).data(), dim_};
}

void Simulator::settle_model(int node) const {
  const auto i = static_cast<std::size_t>(node);
  if (tasks_since_read_[i] > 0) {
    read_interval_[i] = tasks_since_read_[i];
    tasks_since_read_[i] = 0;
  }
  rebuild_kept_model(node);
}

void Simulator::rebuild_kept_model(int node) const {
  const auto i = static_cast<std::size_t>(node);
  if (!model_kept_[i])
    return;
  const auto t0 = std::chrono::steady_clock::now();
  parts_.algorithm->rebuild_model(node, {node_params_.col(node).data(), dim_});
  parts_.algorithm->release_model_inputs(node);
  rebuild_wall_s_ += std::chrono::duration<double>(std::chrono::steady_clock::now() - t0).count();
  model_kept_[i] = 0;
  ++model_rebuilds_;
}

void Simulator::settle_models() const {
  const auto t0 = std::chrono::steady_clock::now();
  std::int64_t rebuilt = 0;
  for (std::size_t i = 0; i < model_kept_.size(); ++i) {
    if (tasks_since_read_[i] > 0) {
      read_interval_[i] = tasks_since_read_[i];
      tasks_since_read_[i] = 0;
    }
    rebuilt += model_kept_[i];
  }
  if (rebuilt == 0)
    return;
  // Each rebuild writes its own node's column from inputs nobody writes now: any order,
  // any thread, the same bits.
  tbb::parallel_for(0, nodes_, [this](int node) {
    const auto i = static_cast<std::size_t>(node);
    if (model_kept_[i])
      parts_.algorithm->rebuild_model(node, {node_params_.col(node).data(), dim_});
  });
  // Handles are counted on the engine thread only.
  for (int node = 0; node < nodes_; ++node)
    if (model_kept_[static_cast<std::size_t>(node)])
      parts_.algorithm->release_model_inputs(node);
  std::fill(model_kept_.begin(), model_kept_.end(), 0);
  model_rebuilds_ += rebuilt;
  rebuild_wall_s_ += std::chrono::duration<double>(std::chrono::steady_clock::now() - t0).count();
}

bool Simulator::run_on_working_copy(int node) {
  const auto i = static_cast<std::size_t>(node);
  ++tasks_since_read_[i];
  const bool worth_it = working_copies_ && (read_interval_[i] >= kTasksWorthKeeping ||
                                            tasks_since_read_[i] >= kTasksWorthKeeping);
  if (worth_it && parts_.algorithm->keep_model_inputs(node)) {
    model_kept_[i] = 1;
    ++tasks_on_working_copy_;
    return true;
  }
  // The task runs on the stored model, which may read it: current, and nothing kept.
  rebuild_kept_model(node);
  return false;
}

void Simulator::pull_models() const {
  if (node_params_.size() == 0)
    node_params_.resize(static_cast<Eigen::Index>(dim_), nodes_);
  resident_->pull_models({node_params_.data(), static_cast<std::size_t>(node_params_.size())});
  ++model_pulls_;
  pulled_batches_ = batcher_->batches();
  pulled_model_writes_ = resident_->model_writes();
}

bool Simulator::computing(int node) const {
  const auto i = static_cast<std::size_t>(node);
  const bool busy = timing_only() ? timing_gradients_[i].busy : slots_[i]->busy();
  return busy || deferred_[i] != 0;
}

Rng& Simulator::rng(int node) {
  return algorithm_rngs_[static_cast<std::size_t>(node)];
}

void Simulator::push_work(SimTime t, EventKind kind, int node, int peer, std::int64_t arg) {
  ++pending_work_;
  queue_.push(t, kind, node, peer, arg);
}

void Simulator::start_gradient(int node, std::int64_t tag) {
  DTSIM_ASSERT(!computing(node), "start_gradient() for a node that is computing");
  common_model_ = {}; // its task, or the batch it joins, may write models
  if (timing_only()) {
    start_timing_gradient(node, tag);
    return;
  }
  GradientSlot& slot = *slots_[static_cast<std::size_t>(node)];
  slot.tag = tag;
  slot.duration = parts_.compute->sample(node, now_);
  if (!launch_gradient(node)) {
    deferred_[static_cast<std::size_t>(node)] = 1;
    deferred_since_[static_cast<std::size_t>(node)] = now_;
  }
}

// Timing-only: the hooks run inline on empty vectors (they keep their bookkeeping, e.g.
// set-aside buffers); every gradient uses a full batch.
void Simulator::start_timing_gradient(int node, std::int64_t tag) {
  TimingGradient& g = timing_gradients_[static_cast<std::size_t>(node)];
  g = TimingGradient{now_, parts_.compute->sample(node, now_), tag, true};
  parts_.algorithm->before_gradient(node, {});
  parts_.algorithm->after_gradient(node, {}, {});
  push_work(now_ + g.duration, EventKind::GradientReady, node, -1, 0);
}

bool Simulator::launch_gradient(int node) {
  GradientSlot& slot = *slots_[static_cast<std::size_t>(node)];
  const auto t0 = std::chrono::steady_clock::now();
  const int count = order_->next_batch(channel_, node, slot.indices());
  order_engine_wall_s_ +=
      std::chrono::duration<double>(std::chrono::steady_clock::now() - t0).count();
  if (count == 0)
    return false;
  slot.set_count(count);
  slot.started = now_;
  // A resident backend finds the model by the node.
  const bool on_copy = !resident_ && run_on_working_copy(node);
  slot.launch(resident_ ? std::span<float>()
                        : std::span<float>(node_params_.col(node).data(), dim_),
              *parts_.algorithm, *order_, node, on_copy);
  push_work(now_ + slot.duration, EventKind::GradientReady, node, -1, 0);
  return true;
}

void Simulator::Channel::release(int node) {
  const auto i = static_cast<std::size_t>(node);
  DTSIM_ASSERT(node >= 0 && node < sim_.nodes_ && sim_.deferred_[i] != 0,
               "release() of a node that is not waiting for its order");
  sim_.deferred_[i] = 0;
  sim_.record_idle(node, sim_.now_ - sim_.deferred_since_[i]);
  const bool launched = sim_.launch_gradient(node);
  DTSIM_ASSERT(launched, "the orderer released a node without a batch");
}

void Simulator::Channel::send(int src, int dst, std::int64_t wire_bytes, std::int64_t tag,
                              std::int64_t arg) {
  Simulator& s = sim_;
  const int last = coordinator();
  DTSIM_ASSERT(src >= 0 && src <= last && dst >= 0 && dst <= last && src != dst && wire_bytes >= 0,
               "order message between invalid endpoints");
  s.order_bytes_ += wire_bytes;
  s.post_message(src, dst, MessageInfo{0, tag, arg}, SharedBuffer(), wire_bytes,
                 EventKind::OrderMessage);
}

void Simulator::Channel::set_timer(int endpoint, SimTime delay, std::int64_t tag) {
  DTSIM_ASSERT(endpoint >= 0 && endpoint <= coordinator(), "order timer for an invalid endpoint");
  sim_.push_work(sim_.now_ + delay, EventKind::OrderTimer, endpoint, -1, tag);
}

// One path for every message, the algorithm's and the example orderer's: a pooled slot, the
// byte counters, and the arrival event from the network model.
void Simulator::post_message(int src, int dst, const MessageInfo& info, SharedBuffer payload,
                             std::int64_t wire_bytes, EventKind kind) {
  std::int64_t slot;
  if (free_messages_.empty()) {
    slot = static_cast<std::int64_t>(messages_.size());
    messages_.emplace_back();
  } else {
    slot = free_messages_.back();
    free_messages_.pop_back();
  }
  Message& m = messages_[static_cast<std::size_t>(slot)];
  m.src = src;
  m.dst = dst;
  m.info = info;
  m.payload = std::move(payload);
  m.wire_bytes = wire_bytes;
  m.sent_at = now_;
  bytes_sent_ += wire_bytes;
  if (src < nodes_) {
    stats_[static_cast<std::size_t>(src)].bytes_sent += wire_bytes;
    ++stats_[static_cast<std::size_t>(src)].messages_sent;
  }
  push_work(parts_.network->send(src, dst, wire_bytes, now_), kind, dst, src, slot);
}

void Simulator::send(int src, int dst, const MessageInfo& info, SharedBuffer payload,
                     std::int64_t wire_bytes) {
  DTSIM_ASSERT(src >= 0 && src <= nodes_ && dst >= 0 && dst <= nodes_ && src != dst,
               "send() between invalid endpoints");
  if (wire_bytes < 0) {
    // Dense float32; a timing-only run's empty buffers stand for full vectors.
    // A resident run's too: its payloads live in the backend.
    const std::size_t floats = !payload        ? 0
                               : timing_only() ? parts_.timing->wire_params
                               : resident_     ? dim_
                                               : payload.view().size();
    wire_bytes = static_cast<std::int64_t>(floats * sizeof(float)) + kMessageHeaderBytes;
  }
  post_message(src, dst, info, std::move(payload), wire_bytes, EventKind::MessageArrival);
}

void Simulator::set_timer(int node, SimTime delay, std::int32_t tag) {
  push_work(now_ + delay, EventKind::Timer, node, -1, tag);
}

void Simulator::record_update(int node, std::int64_t staleness, SimTime waited, bool held) {
  ++updates_;
  if (config_.eval_every_updates > 0 &&
      updates_ / config_.eval_every_updates > progress_evaluations_) {
    progress_evaluations_ = updates_ / config_.eval_every_updates;
    queue_.push(now_, EventKind::Evaluation, -1, -1, kProgressEvaluation);
  }
  if (config_.record_events) {
    EventRecord rec;
    rec.time_ns = now_.ns();
    rec.kind = static_cast<std::int32_t>(EventKind::Update);
    rec.node = node;
    rec.staleness = staleness;
    rec.wait_ns = waited.ns();
    rec.held = held ? 1 : 0;
    parts_.trace->event(rec);
  }
  if (node >= 0 && node < nodes_)
    ++stats_[static_cast<std::size_t>(node)].updates;
  if (staleness >= 0) {
    ++staleness_histogram_[std::min<std::size_t>(static_cast<std::size_t>(staleness),
                                                 kStalenessBins - 1)];
    staleness_sum_since_eval_ += static_cast<double>(staleness);
    ++stale_updates_since_eval_;
  }
}

void Simulator::record_idle(int node, SimTime waited) {
  if (node >= 0 && node < nodes_)
    stats_[static_cast<std::size_t>(node)].idle_s += waited.seconds();
}

double Simulator::train_size() const {
  return static_cast<double>(timing_only() ? parts_.timing->train_size : parts_.train->size());
}

double Simulator::epochs() const {
  return static_cast<double>(samples_) / train_size();
}

double Simulator::fraction_done() const {
  double f = 0;
  if (config_.stop_epochs > 0)
    f = std::max(f, epochs() / config_.stop_epochs);
  if (config_.stop_sim_time_s > 0)
    f = std::max(f, now_.seconds() / config_.stop_sim_time_s);
  if (config_.stop_steps > 0)
    f = std::max(f, static_cast<double>(gradient_steps_) /
                        static_cast<double>(config_.stop_steps * nodes_));
  return std::min(f, 1.0);
}

void Simulator::stop(RunStatus status, std::string message) {
  if (stopped_)
    return;
  stopped_ = true;
  status_ = status;
  status_message_ = std::move(message);
}

GradientResult Simulator::finish_gradient(int node, int& count) {
  const auto i = static_cast<std::size_t>(node);
  if (timing_only()) {
    TimingGradient& g = timing_gradients_[i];
    g.busy = false;
    stats_[i].compute_s += g.duration.seconds();
    count = config_.batch_size;
    return GradientResult{{}, std::nan(""), g.tag, g.started};
  }
  GradientSlot& slot = *slots_[i];
  slot.join();
  gradient_wall_s_ += slot.gradient_wall_seconds();
  hooks_wall_s_ += slot.hooks_wall_seconds();
  order_task_wall_s_ += slot.order_wall_seconds();
  stats_[i].compute_s += slot.duration.seconds();
  count = slot.count();
  return GradientResult{slot.grad(), slot.loss(), slot.tag, slot.started};
}

void Simulator::on_gradient_ready(const Event& e) {
  const int node = e.node;
  int count = 0;
  const GradientResult result = finish_gradient(node, count);
  ++stats_[static_cast<std::size_t>(node)].gradient_steps;
  ++gradient_steps_;
  samples_ += count;
  if (config_.eval_every_epochs > 0) {
    // Thresholds in examples, so that the k-th evaluation falls at the same fraction of an
    // epoch whatever the node count.
    const double every = config_.eval_every_epochs * train_size();
    const auto crossed =
        static_cast<std::int64_t>(std::floor(static_cast<double>(samples_) / every));
    if (crossed > progress_evaluations_) {
      progress_evaluations_ = crossed;
      queue_.push(now_, EventKind::Evaluation, -1, -1, kProgressEvaluation);
    }
  }
  if (!timing_only()) {
    const double loss = result.loss;
    if (!std::isfinite(loss) || loss > config_.divergence_loss) {
      stop(RunStatus::Diverged, "node " + std::to_string(node) + " minibatch loss " +
                                    std::to_string(loss) +
                                    " at t=" + std::to_string(now_.seconds()) + " s");
      return;
    }
    loss_sum_since_eval_ += loss;
    ++losses_since_eval_;
  }
  parts_.algorithm->on_gradient(*this, node, result);
  // After the algorithm: its messages (e.g. the gradient to a server) go out on the node's
  // link before the orderer's, as a worker would send what the next step waits for first.
  if (order_acts_on_gradients_) { // false without an order
    const auto t0 = std::chrono::steady_clock::now();
    order_->on_gradient_ready(channel_, node);
    order_engine_wall_s_ +=
        std::chrono::duration<double>(std::chrono::steady_clock::now() - t0).count();
  }
  if (probe_ && static_cast<std::int64_t>(std::floor(epochs())) > epochs_measured_)
    measure_epoch();
  if ((config_.stop_epochs > 0 && epochs() >= config_.stop_epochs) ||
      (config_.stop_steps > 0 && gradient_steps_ >= config_.stop_steps * nodes_))
    stop(RunStatus::Completed, "stop rule reached");
}

void Simulator::on_message_arrival(const Event& e) {
  // Moved out first: the handler may send, which can grow messages_ and move its slots.
  const Message m = std::move(messages_[static_cast<std::size_t>(e.arg)]);
  free_messages_.push_back(e.arg);
  if (m.dst < nodes_)
    stats_[static_cast<std::size_t>(m.dst)].bytes_received += m.wire_bytes;
  parts_.algorithm->on_message(*this, m);
  // m's payload handle is released here unless the algorithm kept a copy.
}

void Simulator::on_order_message(const Event& e) {
  Message& m = messages_[static_cast<std::size_t>(e.arg)];
  const OrderMessage om{m.src, m.dst, m.info.version, m.info.round, m.wire_bytes, m.sent_at};
  free_messages_.push_back(e.arg);
  if (om.dst < nodes_)
    stats_[static_cast<std::size_t>(om.dst)].bytes_received += om.wire_bytes;
  const auto t0 = std::chrono::steady_clock::now();
  order_->on_message(channel_, om);
  order_engine_wall_s_ +=
      std::chrono::duration<double>(std::chrono::steady_clock::now() - t0).count();
}

void Simulator::on_order_timer(const Event& e) {
  const auto t0 = std::chrono::steady_clock::now();
  order_->on_timer(channel_, e.node, e.arg);
  order_engine_wall_s_ +=
      std::chrono::duration<double>(std::chrono::steady_clock::now() - t0).count();
}

void Simulator::settle_for_reading() {
  for (auto& slot : slots_)
    slot->wait();
  // Resident models are not pulled here: params_view pulls them for the first reader that
  // needs them, and the evaluations' mean and consensus distance are computed where they
  // are (mean_of_models, consensus), so an evaluation moves P floats, not n * P.
  settle_models();
}

void Simulator::mean_of_models(std::span<float> out) const {
  if (resident_) {
    resident_->mean_of_rows(VectorRef::Kind::model, out);
    return;
  }
  Context::mean_of_models(out);
}

void Simulator::evaluate_node_models() {
  const std::size_t count =
      std::min(static_cast<std::size_t>(config_.eval_per_node_samples), evaluator_->count());
  // A resident backend that can evaluates the models where they are; else they come here.
  if (resident_ && parts_.batched->evaluate_resident_models(
                       evaluator_->features(count), evaluator_->labels(count), node_results_)) {
    backend_evaluated_models_ += nodes_;
    return;
  }
  node_views_.clear();
  for (int i = 0; i < nodes_; ++i)
    node_views_.push_back(params_view(i));
  if (!backend_evaluates(node_views_, count, node_results_))
    evaluator_->evaluate_many(node_views_, count, node_results_);
}

EvalResult Simulator::evaluate_averaged_model() {
  const std::span<const float> model[] = {{eval_model_.data(), dim_}};
  EvalResult r;
  if (!backend_evaluates(model, evaluator_->count(), {&r, 1}))
    r = evaluator_->evaluate(model[0]);
  return r;
}

bool Simulator::backend_evaluates(std::span<const std::span<const float>> models, std::size_t count,
                                  std::span<EvalResult> out) {
  if (!parts_.batched || !parts_.batched->evaluate_models(models, evaluator_->features(count),
                                                          evaluator_->labels(count), out))
    return false;
  backend_evaluated_models_ += static_cast<std::int64_t>(models.size());
  return true;
}

double Simulator::consensus_of_models() {
  if (resident_)
    return resident_->consensus_distance();
  return consensus_distance(node_params_, average_model_);
}

void Simulator::measure_epoch() {
  // No task may read the orderer's state while it is copied out.
  settle_for_reading();
  const auto t0 = std::chrono::steady_clock::now();
  const auto completed = static_cast<std::int64_t>(std::floor(epochs()));
  epochs_measured_ = completed;
  MetricsRow row;
  auto& c = row.columns;
  c.emplace_back("epoch", static_cast<double>(completed));
  c.emplace_back("sim_time_s", now_.seconds());
  c.emplace_back("updates", static_cast<double>(updates_));
  c.emplace_back("gradient_steps", static_cast<double>(gradient_steps_));
  parts_.algorithm->eval_model(*this, {eval_model_.data(), dim_});
  const EvalResult r = evaluate_averaged_model();
  const auto count = static_cast<double>(std::max<std::int64_t>(1, r.count));
  c.emplace_back("test_loss", r.loss_sum / count);
  c.emplace_back("test_accuracy", static_cast<double>(r.correct) / count);
  // Training loss of each node's model on its own data (parameter servers: the server
  // model), averaged over nodes.
  epoch_models_.clear();
  if (parts_.algorithm->has_node_models())
    for (int i = 0; i < nodes_; ++i)
      epoch_models_.push_back(params_view(i));
  else
    epoch_models_.emplace_back(eval_model_.data(), dim_);
  c.emplace_back("train_loss", probe_->node_train_loss(epoch_models_));
  double herding = std::numeric_limits<double>::quiet_NaN();
  if (config_.eval_herding_bound) {
    epoch_orders_.clear();
    for (int i = 0; i < nodes_; ++i)
      epoch_orders_.push_back(order_->epoch_order(i, completed - 1));
    herding = probe_->herding_bound({eval_model_.data(), dim_}, epoch_orders_);
  }
  c.emplace_back("herding_bound", herding);
  c.emplace_back("order_bytes", static_cast<double>(order_bytes_));
  c.emplace_back("bytes_sent", static_cast<double>(bytes_sent_));
  const double wall = std::chrono::duration<double>(std::chrono::steady_clock::now() - t0).count();
  epoch_wall_s_ += wall;
  c.emplace_back("probe_wall_s", wall);
  parts_.trace->epoch(row);
}

void Simulator::handle(const Event& e) {
  if (e.kind != EventKind::Evaluation && e.kind != EventKind::Stop)
    --pending_work_;
  if (config_.record_events) {
    EventRecord rec;
    rec.time_ns = e.time.ns();
    rec.kind = static_cast<std::int32_t>(e.kind);
    rec.node = e.node;
    rec.peer = e.peer;
    if (e.kind == EventKind::MessageArrival || e.kind == EventKind::OrderMessage)
      rec.bytes = messages_[static_cast<std::size_t>(e.arg)].wire_bytes;
    parts_.trace->event(rec);
  }
  switch (e.kind) {
  case EventKind::GradientReady:
    on_gradient_ready(e);
    break;
  case EventKind::MessageArrival:
    on_message_arrival(e);
    break;
  case EventKind::Timer:
    parts_.algorithm->on_timer(*this, e.node, static_cast<std::int32_t>(e.arg));
    break;
  case EventKind::OrderMessage:
    on_order_message(e);
    break;
  case EventKind::OrderTimer:
    on_order_timer(e);
    break;
  case EventKind::Evaluation:
    // Two progress thresholds crossed at one instant give one row.
    if (last_eval_time_ != now_)
      evaluate();
    if (!stopped_ && e.arg == kPeriodicEvaluation)
      queue_.push(now_ + SimTime::from_seconds(config_.eval_every_s), EventKind::Evaluation, -1, -1,
                  kPeriodicEvaluation);
    break;
  case EventKind::Stop:
    stop(RunStatus::Completed, "stop rule reached");
    break;
  case EventKind::Update:
    DTSIM_ASSERT(false, "update records are never queued");
  }
}

void Simulator::evaluate() {
  settle_for_reading();
  const auto t0 = std::chrono::steady_clock::now();
  last_eval_time_ = now_;
  ++evaluations_;
  MetricsRow row;
  auto& c = row.columns;
  c.emplace_back("sim_time_s", now_.seconds());
  c.emplace_back("updates", static_cast<double>(updates_));
  c.emplace_back("gradient_steps", static_cast<double>(gradient_steps_));
  c.emplace_back("epoch", epochs());

  // Timing-only runs have no model: accuracy and loss columns are NaN, kept so that every
  // trace has the same /metrics columns.
  double test_loss = std::nan(""), test_accuracy = std::nan("");
  bool finite_model = true;
  if (evaluator_) {
    parts_.algorithm->eval_model(*this, {eval_model_.data(), dim_});
    finite_model = eval_model_.allFinite();
    const EvalResult r = evaluate_averaged_model();
    const auto count = static_cast<double>(std::max<std::int64_t>(1, r.count));
    test_loss = r.loss_sum / count;
    test_accuracy = static_cast<double>(r.correct) / count;
    last_accuracy_ = test_accuracy;
    last_loss_ = test_loss;
  }
  c.emplace_back("test_loss", test_loss);
  c.emplace_back("test_accuracy", test_accuracy);
  if (losses_since_eval_ > 0)
    last_train_loss_ = loss_sum_since_eval_ / static_cast<double>(losses_since_eval_);
  c.emplace_back("train_loss", losses_since_eval_ > 0 ? last_train_loss_ : std::nan(""));
  loss_sum_since_eval_ = 0;
  losses_since_eval_ = 0;

  const bool node_models = parts_.algorithm->has_node_models();
  double acc_mean = std::nan(""), acc_min = std::nan(""), acc_max = std::nan(""),
         acc_std = std::nan("");
  if (node_models && config_.eval_per_node) {
    evaluate_node_models();
    double s = 0, s2 = 0;
    acc_min = 1.0;
    acc_max = 0.0;
    for (const EvalResult& nr : node_results_) {
      const double a = static_cast<double>(nr.correct) /
                       static_cast<double>(std::max<std::int64_t>(1, nr.count));
      s += a;
      s2 += a * a;
      acc_min = std::min(acc_min, a);
      acc_max = std::max(acc_max, a);
    }
    acc_mean = s / nodes_;
    acc_std = std::sqrt(std::max(0.0, s2 / nodes_ - acc_mean * acc_mean));
  }
  c.emplace_back("node_accuracy_mean", acc_mean);
  c.emplace_back("node_accuracy_min", acc_min);
  c.emplace_back("node_accuracy_max", acc_max);
  c.emplace_back("node_accuracy_std", acc_std);

  double consensus = std::nan("");
  if (node_models && !timing_only())
    consensus = consensus_of_models();
  c.emplace_back("consensus_distance", consensus);
  c.emplace_back("bytes_sent", static_cast<double>(bytes_sent_));
  c.emplace_back("staleness_mean",
                 stale_updates_since_eval_ > 0
                     ? staleness_sum_since_eval_ / static_cast<double>(stale_updates_since_eval_)
                     : std::nan(""));
  staleness_sum_since_eval_ = 0;
  stale_updates_since_eval_ = 0;
  parts_.algorithm->add_metrics(c);
  if (order_)
    order_->add_metrics(c);

  eval_wall_s_ += std::chrono::duration<double>(std::chrono::steady_clock::now() - t0).count();
  parts_.trace->metrics(
      row, std::chrono::duration<double>(std::chrono::steady_clock::now() - wall_start_).count());
  if (evaluator_ && (!finite_model || !std::isfinite(test_loss)))
    stop(RunStatus::Diverged,
         "evaluation model is not finite at t=" + std::to_string(now_.seconds()) + " s");
  report_progress(true);
}

void Simulator::report_progress(bool force) {
  if (!config_.on_progress)
    return;
  const auto now_wall = std::chrono::steady_clock::now();
  if (!force && now_wall - last_progress_ < std::chrono::milliseconds(250))
    return;
  last_progress_ = now_wall;
  Progress p;
  p.sim_time_s = now_.seconds();
  p.epoch = epochs();
  p.updates = updates_;
  p.test_accuracy = last_accuracy_;
  p.train_loss = last_train_loss_;
  p.fraction_done = fraction_done();
  p.wall_seconds = std::chrono::duration<double>(now_wall - wall_start_).count();
  config_.on_progress(p);
}

RunSummary Simulator::summary() const {
  RunSummary s;
  s.status = status_;
  s.message = status_message_;
  s.wall_seconds =
      std::chrono::duration<double>(std::chrono::steady_clock::now() - wall_start_).count();
  auto column = [&](const char* name, auto get) {
    std::vector<double> v;
    for (const NodeStats& st : stats_)
      v.push_back(static_cast<double>(get(st)));
    s.node_columns.emplace_back(name, std::move(v));
  };
  column("updates", [](const NodeStats& st) { return st.updates; });
  column("gradient_steps", [](const NodeStats& st) { return st.gradient_steps; });
  column("compute_s", [](const NodeStats& st) { return st.compute_s; });
  column("idle_s", [](const NodeStats& st) { return st.idle_s; });
  column("bytes_sent", [](const NodeStats& st) { return st.bytes_sent; });
  column("bytes_received", [](const NodeStats& st) { return st.bytes_received; });
  column("messages_sent", [](const NodeStats& st) { return st.messages_sent; });
  {
    std::vector<double> speed, straggler, effective;
    for (int i = 0; i < nodes_; ++i) {
      speed.push_back(parts_.compute->speed_factor(i));
      straggler.push_back(parts_.compute->permanent_straggler(i) ? 1.0 : 0.0);
      effective.push_back(parts_.compute->effective_factor(i));
    }
    s.node_columns.emplace_back("speed_factor", std::move(speed));
    s.node_columns.emplace_back("straggler", std::move(straggler));
    s.node_columns.emplace_back("effective_slowdown", std::move(effective));
  }
  parts_.algorithm->add_node_columns(s.node_columns);
  if (order_)
    order_->add_node_columns(s.node_columns);
  std::size_t last = staleness_histogram_.size();
  while (last > 1 && staleness_histogram_[last - 1] == 0)
    --last;
  s.staleness_histogram.assign(staleness_histogram_.begin(),
                               staleness_histogram_.begin() + static_cast<std::ptrdiff_t>(last));
  s.number_attributes = {
      {"sim_time_s", now_.seconds()},
      {"epochs", epochs()},
      {"updates", static_cast<double>(updates_)},
      {"gradient_steps", static_cast<double>(gradient_steps_)},
      {"final_test_accuracy", final_accuracy()},
      {"final_test_loss", final_loss()},
      {"bytes_sent", static_cast<double>(bytes_sent_)},
      {"message_buffers", static_cast<double>(pool_.buffers_allocated())},
      {"memory_message_buffers_bytes",
       static_cast<double>(pool_.buffers_allocated() * dim_ * sizeof(float))},
      {"gradient_wall_seconds", gradient_wall_s_},
      {"algorithm_task_wall_seconds", hooks_wall_s_},
      {"eval_wall_seconds", eval_wall_s_},
      {"order_task_wall_seconds", order_task_wall_s_},
      {"order_engine_wall_seconds", order_engine_wall_s_},
      {"epoch_wall_seconds", epoch_wall_s_},
      {"order_bytes", static_cast<double>(order_bytes_)},
      {"tasks_on_working_copy", static_cast<double>(tasks_on_working_copy_)},
      {"model_rebuilds", static_cast<double>(model_rebuilds_)},
      {"model_rebuild_wall_seconds", rebuild_wall_s_},
  };
  if (batcher_) {
    const TransferStats bus = batcher_->backend().transfers();
    s.number_attributes.insert(
        s.number_attributes.end(),
        {{"gradient_batches", static_cast<double>(batcher_->batches())},
         {"gradient_batch_mean",
          static_cast<double>(batcher_->jobs()) /
              static_cast<double>(std::max<std::int64_t>(1, batcher_->batches()))},
         {"gradient_batch_largest", static_cast<double>(batcher_->largest_batch())},
         {"host_to_device_bytes", static_cast<double>(bus.host_to_device_bytes)},
         {"device_to_host_bytes", static_cast<double>(bus.device_to_host_bytes)},
         {"device_upload_wall_seconds", bus.upload_seconds},
         {"device_compute_wall_seconds", bus.compute_seconds},
         {"device_download_wall_seconds", bus.download_seconds},
         {"device_staging_wall_seconds", bus.staging_seconds},
         {"device_mixing_wall_seconds", bus.mixing_seconds},
         {"device_steps_wall_seconds", bus.steps_seconds},
         {"device_idle_wall_seconds", bus.idle_seconds},
         {"device_element_wise_steps", static_cast<double>(bus.element_wise_steps)},
         {"device_element_wise_kernels", static_cast<double>(bus.element_wise_kernels)},
         {"resident_vectors", resident_ ? 1.0 : 0.0},
         {"resident_model_pulls", static_cast<double>(model_pulls_)},
         {"backend_evaluated_models", static_cast<double>(backend_evaluated_models_)}});
  }
  if (probe_)
    s.number_attributes.emplace_back("memory_epoch_probe_bytes",
                                     static_cast<double>(probe_->scratch_bytes()));
  return s;
}

RunResult Simulator::run(RunHeader header) {
  wall_start_ = std::chrono::steady_clock::now();
  last_progress_ = wall_start_;
  header.number_attributes.emplace_back("num_params", static_cast<double>(dim_));
  header.number_attributes.emplace_back("nodes", nodes_);
  header.number_attributes.emplace_back("memory_node_params_bytes",
                                        static_cast<double>(dim_ * sizeof(float)) * nodes_);
  header.number_attributes.emplace_back("memory_algorithm_state_bytes",
                                        static_cast<double>(parts_.algorithm->state_bytes()));
  std::size_t per_example_bytes = 0;
  for (const auto& slot : slots_)
    per_example_bytes += slot->per_example_bytes();
  header.number_attributes.emplace_back("memory_per_example_bytes",
                                        static_cast<double>(per_example_bytes));
  header.number_attributes.emplace_back("memory_order_state_bytes",
                                        static_cast<double>(order_ ? order_->state_bytes() : 0));
  header.number_attributes.emplace_back("spectral_gap", parts_.topology->spectral_gap());
  header.number_attributes.emplace_back("train_size", train_size());
  header.number_attributes.emplace_back("test_size",
                                        static_cast<double>(evaluator_ ? evaluator_->count() : 0));
  if (timing_only())
    header.number_attributes.emplace_back("wire_params",
                                          static_cast<double>(parts_.timing->wire_params));
  else
    header.label_histogram = parts_.partition->label_histogram;
  parts_.trace->begin(header);

  // Every node starts from the same model, drawn from the ("init") stream.
  if (!timing_only()) {
    Rng init = Rng::stream(config_.seed, "init", Rng::kNoNode);
    const std::span<float> first{resident_ ? eval_model_.data() : node_params_.col(0).data(), dim_};
    parts_.model->init(first, init);
    if (resident_)
      resident_->push_initial_model(first);
    else
      for (int i = 1; i < nodes_; ++i)
        node_params_.col(i) = node_params_.col(0);
    common_model_ = first; // until the algorithm's start returns or writes a model
    common_model_writes_ = resident_ ? resident_->model_writes() : 0;
  }
  // Row 0: the initial model.
  queue_.push(SimTime(), EventKind::Evaluation, -1, -1,
              config_.eval_every_s > 0 ? kPeriodicEvaluation : kProgressEvaluation);
  if (config_.stop_sim_time_s > 0)
    queue_.push(SimTime::from_seconds(config_.stop_sim_time_s), EventKind::Stop, -1);
  parts_.algorithm->start(*this);
  common_model_ = {};

  std::int64_t handled = 0;
  while (!stopped_) {
    if (config_.interrupt && config_.interrupt->load(std::memory_order_relaxed)) {
      stop(RunStatus::Interrupted, "interrupted by signal");
      break;
    }
    if (queue_.empty() || pending_work_ == 0) {
      // Only evaluations left: nothing can ever change again.
      stop(RunStatus::Failed, "the algorithm stalled: no gradient, message or timer pending at t=" +
                                  std::to_string(now_.seconds()) + " s");
      break;
    }
    const Event e = queue_.pop();
    now_ = e.time;
    handle(e);
    if ((++handled & 63) == 0)
      report_progress(false);
  }
  for (auto& slot : slots_)
    if (slot->busy()) {
      slot->join();
      gradient_wall_s_ += slot->gradient_wall_seconds();
      hooks_wall_s_ += slot->hooks_wall_seconds();
      order_task_wall_s_ += slot->order_wall_seconds();
    }
  if (batcher_) {
    gradient_wall_s_ += batcher_->gradient_wall_seconds();
    hooks_wall_s_ += batcher_->hooks_wall_seconds();
  }
  if (last_eval_time_ != now_ && status_ != RunStatus::Diverged)
    evaluate();
  RunSummary s = summary();
  // A timing-only run evaluates no model: it has no stability measures to rest on too few.
  if (evaluations_ < kFewEvaluations && status_ == RunStatus::Completed && !timing_only()) {
    s.warnings.push_back(
        "only " + std::to_string(evaluations_) + " evaluations (fewer than " +
        std::to_string(kFewEvaluations) +
        "): stability measures of this run rest on too few points; evaluate more often "
        "(eval.every_epochs, default 0.05 = 20 per epoch)");
  }
  parts_.trace->finish(s);

  RunResult r;
  r.status = status_;
  r.message = status_message_;
  r.sim_time_s = now_.seconds();
  r.wall_seconds = s.wall_seconds;
  r.epochs = epochs();
  r.updates = updates_;
  r.gradient_steps = gradient_steps_;
  r.final_test_accuracy = final_accuracy();
  r.final_test_loss = final_loss();
  r.gradient_wall_seconds = gradient_wall_s_;
  r.algorithm_task_wall_seconds = hooks_wall_s_;
  r.model_rebuild_wall_seconds = rebuild_wall_s_;
  r.eval_wall_seconds = eval_wall_s_;
  r.order_wall_seconds = order_task_wall_s_ + order_engine_wall_s_;
  r.epoch_wall_seconds = epoch_wall_s_;
  r.evaluations = evaluations_;
  r.events = handled;
  r.warnings = s.warnings;
  if (batcher_) {
    r.gradient_backend = batcher_->backend().describe();
    r.gradient_batch_mean = static_cast<double>(batcher_->jobs()) /
                            static_cast<double>(std::max<std::int64_t>(1, batcher_->batches()));
    r.bus = batcher_->backend().transfers();
  }
  return r;
}

} // namespace dtsim
