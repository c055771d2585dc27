// SPDX-License-Identifier: MIT
// Batched gradients (model.backend: cpu-batched): the batches the engine forms, and runs
// identical to per-node tasks. The CUDA backend shares this batching; its own tests are in
// tests/cuda.
#include "cuda/cuda_backend.hpp"
#include "models/mlp.hpp"
#include "sim/engine/gradient_batcher.hpp"
#include "sim/optimizers/cpu_resident_gradients.hpp"
#include "sim/scenario/run_plan.hpp"
#include "sim/trace/memory_trace_sink.hpp"
#include "support/config_error.hpp"
#include "support/sink_compare.hpp"
#include "support/tiny_scenarios.hpp"

#include <algorithm>
#include <atomic>
#include <cmath>
#include <doctest/doctest.h>
#include <tbb/global_control.h>

using namespace dtsim;

namespace {

MemoryTraceSink run(const std::string& algorithm, const std::string& backend, int threads,
                    std::vector<std::string> sets = {}) {
  tbb::global_control limit(tbb::global_control::max_allowed_parallelism,
                            static_cast<std::size_t>(threads));
  sets.push_back("model.backend=" + backend);
  RunPlan plan = plan_run_text(testing::tiny_scenario(algorithm), "tiny.yaml", sets);
  MemoryTraceSink sink;
  const RunResult r = execute_plan(plan, sink, threads);
  CHECK(r.status == RunStatus::Completed);
  return sink;
}

void check_same_run(const MemoryTraceSink& a, const MemoryTraceSink& b) {
  REQUIRE(a.rows().size() > 5);
  testing::check_same_run(a, b);
}

// Hooks that only count the after_gradient calls: the batcher's bookkeeping alone.
class NoHooks final : public Algorithm {
public:
  std::string describe() const override { return "no hooks"; }
  void start(Context&) override {}
  void on_gradient(Context&, int, const GradientResult&) override {}
  void on_message(Context&, const Message&) override {}
  void after_gradient(int, std::span<const float>, std::span<float>) override { ++after_hooks; }
  std::size_t state_bytes() const override { return 0; }
  std::atomic<int> after_hooks = 0;
};

// A backend that records the batches it is given and returns a gradient and loss that
// identify each job, so that the batcher's bookkeeping can be checked without a model; as
// a device's resident batch, it gives the losses only in collect(), and records the calls.
class RecordingBackend final : public BatchedGradients {
public:
  explicit RecordingBackend(const NoHooks* hooks = nullptr) : hooks_(hooks) {}
  std::string describe() const override { return "recording"; }
  void compute(std::span<GradientJob> jobs) override {
    sizes.push_back(jobs.size());
    calls += "compute ";
    for (GradientJob& job : jobs) {
      job.grad[0] = job.params[0] * 2.0f;
      job.loss = -1.0; // in flight
    }
  }
  void finish(std::span<GradientJob>) override { calls += "finish "; }
  void collect(std::span<GradientJob> jobs) override {
    calls += "collect(" + std::to_string(hooks_ ? hooks_->after_hooks.load() : -1) + ") ";
    for (GradientJob& job : jobs)
      job.loss = static_cast<double>(job.indices.size());
  }
  std::vector<std::size_t> sizes;
  std::string calls;

private:
  const NoHooks* hooks_;
};

// cpu-batched's gradients, and evaluations of host models of its own, as a device gives:
// marked results (a loss of 0.5 and every fourth example right) and a record of the calls.
class EvaluatingBackend final : public BatchedGradients {
public:
  explicit EvaluatingBackend(std::unique_ptr<BatchedGradients> gradients)
      : gradients_(std::move(gradients)) {}
  std::string describe() const override { return gradients_->describe(); }
  void compute(std::span<GradientJob> jobs) override { gradients_->compute(jobs); }
  bool evaluate_models(std::span<const std::span<const float>> models,
                       std::span<const float> features, std::span<const std::int32_t> labels,
                       std::span<EvalResult> out) override {
    calls.push_back({models.size(), labels.size()});
    CHECK(features.size() == labels.size() * 16); // the tiny scenario's 16 features
    CHECK(out.size() == models.size());
    for (const std::span<const float> model : models)
      finite = finite &&
               std::all_of(model.begin(), model.end(), [](float v) { return std::isfinite(v); });
    const auto n = static_cast<std::int64_t>(labels.size());
    for (EvalResult& r : out)
      r = EvalResult{0.5 * static_cast<double>(n), n / 4, n};
    return true;
  }
  struct Call {
    std::size_t models, examples;
    bool operator==(const Call&) const = default;
  };
  std::vector<Call> calls;
  bool finite = true;

private:
  std::unique_ptr<BatchedGradients> gradients_;
};

} // namespace

TEST_SUITE("engine") {
  TEST_CASE("Batched gradients: a backend that evaluates host models scores a run's models") {
    // Every evaluation's averaged model (and the epoch probe's), on the eval.test_samples
    // examples, and its node models, on the per_node_samples, go to the backend; the trace
    // has the backend's figures.
    RunPlan plan = plan_run_text(
        testing::tiny_scenario("{name: dsgd, lr: 0.1}"), "tiny.yaml",
        {"model.backend=cpu-batched", "eval.test_samples=300", "eval.per_epoch=true"});
    auto backend = std::make_unique<EvaluatingBackend>(std::move(plan.batched));
    EvaluatingBackend& evaluating = *backend;
    plan.batched = std::move(backend);
    MemoryTraceSink sink;
    REQUIRE(execute_plan(plan, sink, 2).status == RunStatus::Completed);
    REQUIRE(sink.rows().size() > 5);
    REQUIRE_FALSE(sink.epoch_rows().empty());
    // Per evaluation row the averaged model on 300 examples, then the 8 node models on 200;
    // per epoch probe the averaged model.
    const auto averaged = std::ranges::count(evaluating.calls, EvaluatingBackend::Call{1, 300});
    const auto nodes = std::ranges::count(evaluating.calls, EvaluatingBackend::Call{8, 200});
    CHECK(averaged == static_cast<std::ptrdiff_t>(sink.rows().size() + sink.epoch_rows().size()));
    CHECK(nodes == static_cast<std::ptrdiff_t>(sink.rows().size()));
    CHECK(evaluating.calls.size() == static_cast<std::size_t>(averaged + nodes));
    CHECK(testing::summary_attribute(sink, "backend_evaluated_models") ==
          static_cast<double>(averaged + 8 * nodes));
    CHECK(evaluating.finite);
    for (const auto* rows : {&sink.rows(), &sink.epoch_rows()})
      for (const MetricsRow& row : *rows) {
        CHECK(row.get("test_accuracy") == 0.25);
        CHECK(row.get("test_loss") == 0.5);
      }
    for (const MetricsRow& row : sink.rows()) {
      CHECK(row.get("node_accuracy_mean") == 0.25);
      CHECK(row.get("node_accuracy_min") == 0.25);
    }
  }

  TEST_CASE("Batched gradients: cpu-batched runs write the per-node tasks' traces") {
    // Synchronous and asynchronous gossip, a parameter server, pairwise gossip and a
    // compressed method; 1 and 2 threads.
    for (const char* alg :
         {"{name: dsgd, lr: 0.1, momentum: 0.9}", "{name: dsgdm, lr: 0.1, mode: async}",
          "{name: asgd, lr: 0.05}", "{name: ad-psgd, lr: 0.1}", "{name: swarm-sgd, lr: 0.1}",
          "{name: choco-sgd, lr: 0.1, compressor: {kind: topk, ratio: 0.25}}"}) {
      CAPTURE(alg);
      const MemoryTraceSink reference = run(alg, "cpu", 2);
      check_same_run(reference, run(alg, "cpu-batched", 1));
      check_same_run(reference, run(alg, "cpu-batched", 2));
    }
  }

  TEST_CASE("Resident vectors: cpu-resident runs write cpu-batched's traces") {
    // D-PSGD in either order, QG-DSGDm, DecentLaM, gradient and momentum tracking, D2, CHOCO-SGD,
    // AD-PSGD, SwarmSGD, ASGD, DC-ASGD, GSGM and SSGD keep their models, momenta, messages and
    // server vectors in the backend (synchronous with and without momentum, Nesterov, weight decay,
    // a time-varying schedule; asynchronous, also with reordering jitter); the others cannot
    // and run as cpu-batched. 1 and 2 threads. An attached method frees its host copies of
    // what the backend holds (momenta, QG's buffer, u, the trackers, D2's previous steps, the
    // corrections, CHOCO's estimates, DC's backups, GSGM's table).
    struct Case {
      const char* algorithm;
      std::vector<std::string> sets;
      bool resident;
      bool host_state = true; // the method holds per-node vectors on cpu-batched
    };
    const std::vector<Case> cases = {
        {"{name: dsgd, lr: 0.1, momentum: 0.9}", {}, true},
        {"{name: dsgd, lr: 0.1}", {}, true, false},
        {"{name: dsgdm-n, lr: 0.1, weight_decay: 0.001}", {}, true},
        {"{name: dsgd, lr: 0.1, momentum: 0.9}", {"topology.kind=one_peer_exponential"}, true},
        {"{name: dsgdm, lr: 0.1, mode: async}", {}, true},
        {"{name: dsgd, lr: 0.1, mode: async}", {"system.network.jitter_s=0.01"}, true, false},
        // QG-DSGDm: the quasi-global buffer refreshed in the mixing, read in the step; with a
        // refresh period, the displacement summed in the rule's row between refreshes (also
        // asynchronous with jitter).
        {"{name: qg-dsgdm, lr: 0.1, weight_decay: 0.001}", {}, true},
        {"{name: qg-dsgdm-n, lr: 0.1, mu: 0.5}", {"topology.kind=one_peer_exponential"}, true},
        {"{name: qg-dsgdm, lr: 0.1, mode: async}", {"system.network.jitter_s=0.01"}, true},
        {"{name: qg-dsgdm, lr: 0.1, refresh_period: 2}", {}, true},
        {"{name: qg-dsgdm-n, lr: 0.1, refresh_period: 3, weight_decay: 0.001, mode: async}",
         {"system.network.jitter_s=0.01"},
         true},
        // Combine-then-adapt: u kept in the backend, the node's own model mixed.
        {"{name: dsgd, lr: 0.1, order: combine_then_adapt}", {}, true},
        {"{name: dsgdm-n, lr: 0.1, weight_decay: 0.001, order: combine_then_adapt}", {}, true},
        {"{name: dsgdm, lr: 0.1, mode: async, order: combine_then_adapt}",
         {"system.network.jitter_s=0.01"},
         true},
        // AD-PSGD: live models, directions and messages in the backend, each averaging a
        // queued step; active/passive on the ring, and every node active (deadlocks broken,
        // the increment form), with momentum and weight decay.
        {"{name: ad-psgd, lr: 0.1}", {}, true},
        {"{name: ad-psgd, lr: 0.1, momentum: 0.9, weight_decay: 0.001, split: none}",
         {"system.network.jitter_s=0.01"},
         true},
        // ASGD: the server's model and momentum in the backend, a gradient served from its
        // worker's row; with server momentum and weight decay, and with a busy server
        // (gradients queue for it).
        {"{name: asgd, lr: 0.05, momentum: 0.9, weight_decay: 0.001}", {}, true},
        {"{name: asgd, lr: 0.05, server: {update_s: 0.004}}", {}, true},
        // DC-ASGD's compensation against the worker's model row (its backup): constant, and
        // adaptive (the mean square a server vector) with a busy server.
        {"{name: dc-asgd, lr: 0.05, momentum: 0.9, weight_decay: 0.001}", {}, true},
        {"{name: dc-asgd, lr: 0.05, lambda: 0.5, server: {update_s: 0.004}}", {}, true},
        {"{name: dc-asgd, lr: 0.05, variant: adaptive, server: {update_s: 0.004}}", {}, true},
        // GSGM: its table in the live rows, the double sum and the mean in the backend; the
        // window and last-k averages with a white list, no averaging on a DC base, both, and
        // averages on the adaptive compensation.
        {"{name: gsgm, lr: 0.01, momentum: 0.9}", {}, true},
        {"{name: gsgm, lr: 0.01, average_by: last, last: 3, slack: 2, weight_decay: 0.001}",
         {},
         true},
        {"{name: gsgm, lr: 0.05, average: false, global_momentum: false, base: dc-asgd}", {}, true},
        {"{name: gsgm, lr: 0.01, window: 2, base: dc-asgd, dc: {lambda: 0.5}}", {}, true},
        {"{name: gsgm, lr: 0.01, base: dc-asgd, dc: {variant: adaptive}}", {}, true},
        // Gradient tracking: the tracker, g_prev and u in the backend, two-vector messages;
        // with Nesterov momentum and weight decay, and on a one-peer exponential schedule.
        {"{name: gradient-tracking, lr: 0.05}", {}, true},
        {"{name: gradient-tracking, lr: 0.05, momentum: 0.9, nesterov: true, weight_decay: 0.001}",
         {},
         true},
        {"{name: gradient-tracking, lr: 0.05, momentum: 0.5}",
         {"topology.kind=one_peer_exponential"},
         true},
        // D2: x_prev and lr g_prev in the backend, the plain mixing (an odd ring: D2 refuses
        // the even one); with weight decay on the complete graph.
        {"{name: d2, lr: 0.05}", {"nodes=9"}, true},
        {"{name: d2, lr: 0.05, weight_decay: 0.001}", {"topology.kind=complete"}, true},
        // DecentLaM: the momentum on the mixed displacement, in the backend's mixing.
        {"{name: decentlam, lr: 0.05}", {}, true},
        {"{name: decentlam, lr: 0.05, momentum: 0.5, weight_decay: 0.001}", {"nodes=9"}, true},
        // SSGD: the round's sum in the server's scratch vector; with momentum and weight decay.
        {"{name: ssgd, lr: 0.1}", {}, true},
        {"{name: ssgd, lr: 0.1, momentum: 0.9, weight_decay: 0.001}", {}, true},
        // SwarmSGD: the public models, y, o, Q(X) and the decodings in the backend, each
        // step of an interaction a queued step, the compressor's through the method's own
        // (stochastic and nearest lattice rounding, float32, fp16; broken deadlocks'
        // increment form with jitter); the blocking ablation, also with jitter.
        {"{name: swarm-sgd, lr: 0.1, momentum: 0.9, compressor: {kind: lattice, bits: 4, "
         "side: 0.02, rounding: stochastic}}",
         {},
         true},
        {"{name: swarm-sgd, lr: 0.1, local_steps: 3, local_steps_dist: geometric, "
         "compressor: {kind: lattice, bits: 8, side: 0.002}}",
         {"system.network.jitter_s=0.01"},
         true},
        {"{name: swarm-sgd, lr: 0.1, compressor: {kind: none}}",
         {"system.network.jitter_s=0.01"},
         true},
        {"{name: swarm-sgd, lr: 0.1, blocking: true}", {}, true},
        {"{name: swarm-sgd, lr: 0.1, blocking: true, local_steps: 1, compressor: {kind: lattice, "
         "bits: 8, side: 0.002}}",
         {"system.network.jitter_s=0.01"},
         true},
        {"{name: swarm-sgd, lr: 0.1, compressor: {kind: fp16}}", {"nodes=9"}, true},
        // SwarmSGD with every other built-in compressor that has a device form (QSGD by
        // buckets of 16 and of 5 of the model's 68 floats and over the whole vector, top-k,
        // random-k, sign), and with error feedback (its residuals, on a device a vector per
        // node): the encodings through the method's own compressors and streams (the device
        // forms' parameters: resident_compression_test.cpp).
        {"{name: swarm-sgd, lr: 0.1, compressor: {kind: qsgd, bits: 4, bucket: 16}}", {}, true},
        {"{name: swarm-sgd, lr: 0.1, compressor: {kind: qsgd, bits: 2, bucket: 5}}", {}, true},
        {"{name: swarm-sgd, lr: 0.1, momentum: 0.9, compressor: {kind: qsgd, bucket: 0}}",
         {"system.network.jitter_s=0.01"},
         true},
        {"{name: swarm-sgd, lr: 0.1, compressor: {kind: topk, ratio: 0.3}}", {}, true},
        {"{name: swarm-sgd, lr: 0.1, compressor: {kind: randomk, ratio: 0.5}}", {}, true},
        {"{name: swarm-sgd, lr: 0.05, compressor: {kind: sign}}", {}, true},
        {"{name: swarm-sgd, lr: 0.1, compressor: {kind: topk, ratio: 0.3, error_feedback: true}}",
         {},
         true},
        {"{name: swarm-sgd, lr: 0.1, compressor: {kind: lattice, bits: 8, side: 0.002, "
         "error_feedback: true}}",
         {},
         true},
        // Momentum tracking: m, d and two-vector messages in the backend, the all-reduce of
        // the first gradients there; with weight decay on a one-peer exponential schedule,
        // and with network jitter.
        {"{name: momentum-tracking, lr: 0.05}", {}, true},
        {"{name: momentum-tracking, lr: 0.05, momentum: 0.5, weight_decay: 0.001}",
         {"topology.kind=one_peer_exponential"},
         true},
        {"{name: momentum-tracking, lr: 0.05}", {"system.network.jitter_s=0.01", "nodes=9"}, true},
        // CHOCO-SGD: x_half, the public estimates and their sums in the backend, the
        // compression there with the method's own compressors and streams; QSGD by buckets
        // in either order, with Nesterov momentum and weight decay, on the torus; every other
        // built-in compressor that CHOCO-SGD takes, QSGD by small buckets (a device thread
        // each) among them.
        {"{name: choco-sgd, lr: 0.1, momentum: 0.9, gamma: 0.6}", {}, true},
        {"{name: choco-sgd, lr: 0.1, gamma: 0.5, order: combine_then_adapt, "
         "compressor: {kind: qsgd, bits: 2, bucket: 100}}",
         {},
         true},
        {"{name: choco-sgd, lr: 0.1, momentum: 0.9, nesterov: true, weight_decay: 0.001, "
         "compressor: {kind: qsgd, bits: 8, bucket: 1000}}",
         {"topology.kind=torus", "nodes=9"},
         true},
        {"{name: choco-sgd, lr: 0.1, compressor: {kind: qsgd, bucket: 0}}", {}, true},
        {"{name: choco-sgd, lr: 0.1, momentum: 0.9, compressor: {kind: topk, ratio: 0.25}}",
         {},
         true},
        // A star: the hub's and the leaves' initial sums differ (two weight patterns, one of
        // a single node), each written to its nodes from the common initial model.
        {"{name: choco-sgd, lr: 0.05, gamma: 0.3, compressor: {kind: topk, ratio: 0.25}}",
         {"topology.kind=star"},
         true},
        {"{name: choco-sgd, lr: 0.1, order: combine_then_adapt, "
         "compressor: {kind: randomk, ratio: 0.3}}",
         {},
         true},
        {"{name: choco-sgd, lr: 0.05, gamma: 0.2, compressor: {kind: randomk, ratio: 0.5, "
         "form: unbiased}}",
         {},
         true},
        {"{name: choco-sgd, lr: 0.1, gamma: 0.3, compressor: {kind: sign}}", {}, true},
        {"{name: choco-sgd, lr: 0.1, compressor: {kind: fp16}}", {"nodes=9"}, true},
        {"{name: choco-sgd, lr: 0.1, gamma: 1, compressor: {kind: none}}", {}, true},
        {"{name: choco-sgd, lr: 0.1, compressor: {kind: qsgd, bucket: 8}}", {}, true}};
    for (const Case& c : cases) {
      CAPTURE(c.algorithm);
      CAPTURE(c.sets.size());
      const MemoryTraceSink reference = run(c.algorithm, "cpu-batched", 2, c.sets);
      CHECK(testing::summary_attribute(reference, "resident_vectors") == 0);
      for (int threads : {1, 2}) {
        const MemoryTraceSink resident = run(c.algorithm, "cpu-resident", threads, c.sets);
        CHECK(testing::summary_attribute(resident, "resident_vectors") == (c.resident ? 1 : 0));
        check_same_run(reference, resident);
        const auto state = [](const MemoryTraceSink& s) {
          return testing::header_attribute(s, "memory_algorithm_state_bytes");
        };
        if (c.resident && c.host_state)
          CHECK(state(resident) < state(reference));
        else
          CHECK(state(resident) == state(reference));
      }
    }
  }

  TEST_CASE("Resident vectors: evaluations leave the models in the backend") {
    // The mean and the consensus distance are computed where the models are, and the
    // per-node accuracies too (on cpu-resident the engine's Evaluator on views of its rows,
    // as cuda-resident runs them on the device): no evaluation pulls the models, and the
    // traces are still cpu-batched's. The epoch probe reads every model on the host, so
    // those evaluations pull them. Nor does a method's start (CHOCO-SGD's estimates,
    // asynchronous gossip's first copies): it reads the one initial model (common_model).
    for (const char* algorithm :
         {"{name: dsgd, lr: 0.1, momentum: 0.9}", "{name: ad-psgd, lr: 0.1}",
          "{name: dsgdm, lr: 0.1, mode: async}",
          "{name: choco-sgd, lr: 0.1, compressor: {kind: topk, ratio: 0.25}}"}) {
      CAPTURE(algorithm);
      for (const std::vector<std::string>& sets :
           {std::vector<std::string>{"eval={every_s: 0.05}"}, std::vector<std::string>{}}) {
        CAPTURE(sets.size()); // 0: the tiny scenario's per-node accuracies
        const MemoryTraceSink reference = run(algorithm, "cpu-batched", 2, sets);
        const MemoryTraceSink resident = run(algorithm, "cpu-resident", 2, sets);
        CHECK(testing::summary_attribute(resident, "resident_vectors") == 1);
        check_same_run(reference, resident);
        CHECK(testing::summary_attribute(resident, "resident_model_pulls") == 0);
        // The per-node accuracies (8 nodes an evaluation) by the backend, on its rows.
        CHECK(testing::summary_attribute(resident, "backend_evaluated_models") ==
              (sets.empty() ? 8.0 * static_cast<double>(resident.rows().size()) : 0.0));
        CHECK(testing::summary_attribute(reference, "backend_evaluated_models") == 0);
      }
      const std::vector<std::string> probe = {"eval={every_s: 0.05, per_epoch: true}"};
      const MemoryTraceSink reference = run(algorithm, "cpu-batched", 2, probe);
      const MemoryTraceSink epochs = run(algorithm, "cpu-resident", 2, probe);
      check_same_run(reference, epochs);
      const double pulls = testing::summary_attribute(epochs, "resident_model_pulls");
      CHECK(pulls > 0);
      CHECK(pulls <= static_cast<double>(epochs.rows().size()));
    }
  }

  TEST_CASE("Resident vectors: a run's start copies one model into every node's row") {
    // The engine hands a resident backend the one drawn model (push_initial_model) and keeps
    // no host copy of the n models until it reads them; a pull then gives n copies.
    const Mlp mlp(6, {5}, 3);
    Dataset train;
    train.num_classes = 3;
    train.shape = {6};
    train.features = Eigen::MatrixXf::Zero(6, 4);
    train.labels = {0, 1, 2, 0};
    const int nodes = 5;
    CpuResidentGradients store(mlp, train, 2, nodes);
    ResidentVectors::LocalUpdateRule rule;
    rule.momentum = 0.9f;
    store.set_local_update(rule);
    std::vector<float> model(mlp.num_params());
    Rng init = Rng::stream(3, "test", Rng::kNoNode);
    mlp.init(model, init);
    store.push_initial_model(model);
    std::vector<float> pulled(model.size() * nodes, -1.0f);
    store.pull_models(pulled);
    for (int i = 0; i < nodes; ++i) {
      CAPTURE(i);
      CHECK(std::equal(model.begin(), model.end(), pulled.begin() + i * model.size()));
    }
    CHECK(store.consensus_distance() < 1e-12);
  }

  TEST_CASE("Batched gradients: a synchronous round is one batch of every node") {
    // Constant compute times and no stragglers: all 8 nodes start each round together.
    const std::vector<std::string> sets = {"system.compute={dist: constant, mean_s: 0.01}"};
    const MemoryTraceSink s = run("{name: dsgd, lr: 0.1}", "cpu-batched", 2, sets);
    CHECK(testing::summary_attribute(s, "gradient_batch_largest") == 8);
    CHECK(testing::summary_attribute(s, "gradient_batch_mean") == doctest::Approx(8.0));
    CHECK(testing::summary_attribute(s, "gradient_batches") > 10);
    CHECK(testing::summary_attribute(s, "host_to_device_bytes") == 0);
    std::string backend;
    for (const auto& [name, value] : s.header().text_attributes)
      if (name == "gradient_backend")
        backend = value;
    CHECK(backend.rfind("cpu-batched (softmax", 0) == 0);
  }

  TEST_CASE("Batched gradients: joining one gradient runs every pending one, once") {
    NoHooks hooks;
    RecordingBackend backend(&hooks);
    GradientBatcher batcher(backend, 3);
    RunPlan plan = plan_run_text(testing::tiny_scenario("{name: dsgd, lr: 0.1}"), "tiny.yaml", {});
    std::vector<std::unique_ptr<GradientSlot>> slots;
    std::vector<std::vector<float>> params(3, std::vector<float>(plan.model->num_params(), 0.0f));
    for (int i = 0; i < 3; ++i) {
      slots.push_back(std::make_unique<GradientSlot>(*plan.model, 16, batcher));
      slots.back()->set_count(4 + i);
      params[static_cast<std::size_t>(i)][0] = static_cast<float>(i + 1);
    }
    for (int i = 0; i < 3; ++i)
      slots[static_cast<std::size_t>(i)]->launch(params[static_cast<std::size_t>(i)], hooks,
                                                 *plan.order, i);
    CHECK(backend.sizes.empty()); // nothing runs until a result is needed
    CHECK_FALSE(batcher.empty());
    slots[1]->join();
    REQUIRE(backend.sizes == std::vector<std::size_t>{3});
    // The losses are taken after every after-hook and finish(), as a device leaves them in
    // flight while the host runs those.
    CHECK(backend.calls == "compute finish collect(3) ");
    CHECK(batcher.empty());
    for (int i = 0; i < 3; ++i) {
      GradientSlot& slot = *slots[static_cast<std::size_t>(i)];
      if (i != 1)
        slot.join();
      CHECK(slot.grad()[0] == static_cast<float>(2 * (i + 1)));
      CHECK(slot.loss() == static_cast<double>(4 + i));
    }
    CHECK(backend.sizes.size() == 1); // the other joins found their results
    CHECK(batcher.batches() == 1);
    CHECK(batcher.jobs() == 3);
  }

  TEST_CASE("Batched gradients: model.backend is checked") {
    const std::string tiny = testing::tiny_scenario("{name: dsgd, lr: 0.1}");
    const auto error = [](auto&& f, std::initializer_list<const char*> parts) {
      const std::string message = testing::config_error_of(f);
      CAPTURE(message);
      for (const char* part : parts)
        CHECK(message.find(part) != std::string::npos);
    };
    error([&] { plan_run_text(tiny, "t.yaml", {"model.backend=gpu"}); },
          {"model.backend", "cpu-batched"});
    // Balancing orders need per-example gradients, which batched backends do not compute.
    error(
        [&] {
          plan_run_text(tiny, "t.yaml", {"model.backend=cpu-batched", "data.order={kind: grab}"});
        },
        {"model.backend", "per-example", "backend: cpu"});
    // cuda: a run needs a device (none in CI).
    const std::string image = R"(
nodes: 2
data: {dataset: synthetic, synthetic: {features: 16, classes: 4, train: 200, test: 50}}
model: {kind: mlp, hidden: [8], backend: cuda}
stop: {steps: 1}
)";
    if (!cuda::unavailable_reason().empty())
      error([&] { plan_run_text(image, "c.yaml", {}); }, {"c.yaml:4", "model.backend", "CUDA"});
    // Every built-in model runs on cuda: LeNet is checked without a GPU.
    const std::vector<std::string> lenet{
        "data={dataset: fashion-mnist, train_samples: 200, test_samples: 50}",
        "model={kind: lenet, backend: cuda}"};
    CHECK_NOTHROW(plan_run_text(image, "c.yaml", lenet, PlanUse::check));
    // A checking plan needs no GPU.
    CHECK_NOTHROW(plan_run_text(image, "c.yaml", {}, PlanUse::check));
  }
}
