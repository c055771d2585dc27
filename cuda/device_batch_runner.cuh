// SPDX-License-Identifier: MIT
// What every device pass shares: the training set on the device, the nodes' parameters and
// indices up and gradients and losses down through pinned staging buffers, jobs grouped by batch
// size and run in chunks of what fits on the device.
#pragma once

#include "cuda/device_gradients.hpp"
#include "cuda/device_memory.cuh"
#include "cuda/device_resident_store.cuh"
#include "cuda/job_groups.hpp"
#include "cuda/kernel_preload.cuh"
#include "cuda/resident_fit.hpp"
#include "cuda/resident_phase_timer.cuh"

#include <algorithm>
#include <chrono>
#include <memory>
#include <optional>
#include <tbb/blocked_range.h>
#include <tbb/parallel_for.h>
#include <vector>

namespace dtsim::cuda {
namespace {

// Network provides num_params(), describe(), scratch_floats(n) (its buffers' floats per
// node for minibatches of up to n examples) and run(blas, stream, common, scratch, count, n).
template <class Network> class DeviceBatchRunner final : public DeviceGradients {
public:
  // choices: the store's kernels, the set-up preload, and what a network with fused_layers()
  // (the MLP) fuses with a resident batch's layers: the first one or two layers' weight
  // gradients into the local steps (finish()), a plain mixing into the first layer's forward
  // product (compute()).
  DeviceBatchRunner(Network network, std::span<const float> train_features,
                    std::span<const std::int32_t> train_labels, int batch_size,
                    int max_nodes_per_batch, ResidentSize resident, KernelChoices choices = {})
      : net_(std::move(network)), batch_size_(batch_size), blas_(stream_.stream) {
    if (batch_size < 1 || max_nodes_per_batch < 1 || train_labels.empty() ||
        train_features.size() % train_labels.size() != 0)
      throw std::invalid_argument("device gradients: inconsistent batch size or training set");
    int device = 0;
    check(cudaGetDevice(&device), "cudaGetDevice");
    cudaDeviceProp prop{};
    check(cudaGetDeviceProperties(&prop, device), "cudaGetDeviceProperties");
    name_ = prop.name;
    sm_count_ = prop.multiProcessorCount;
    examples_ = train_labels.size();
    scratch_.resize(net_.scratch_floats(batch_size).size());
    scratch_pointers_.resize(scratch_.size());
    train_.resize(train_features.size(), "cudaMalloc (training set)");
    labels_.resize(train_labels.size(), "cudaMalloc (training labels)");
    // On the batches' stream (a non-blocking one, which the legacy default stream's copies
    // would not order with), and finished before the first batch.
    const cudaStream_t s = stream_.stream;
    check(cudaMemcpyAsync(train_.data, train_features.data(), train_features.size() * sizeof(float),
                          cudaMemcpyHostToDevice, s),
          "cudaMemcpyAsync (training set)");
    check(cudaMemcpyAsync(labels_.data, train_labels.data(),
                          train_labels.size() * sizeof(std::int32_t), cudaMemcpyHostToDevice, s),
          "cudaMemcpyAsync (training labels)");
    check(cudaStreamSynchronize(s), "cudaStreamSynchronize");
    bus_.host_to_device_bytes += static_cast<std::int64_t>(
        train_features.size() * sizeof(float) + train_labels.size() * sizeof(std::int32_t));
    // Nodes per device batch: what three quarters of the device's memory holds (so that
    // cuBLAS's workspace still fits), from its total, not its free memory, so that the
    // chunks and with them a run's results do not depend on what else runs on the GPU; at
    // most max_nodes_per_batch (the kernels index nodes by blockIdx.y).
    std::size_t free_bytes = 0, total_bytes = 0;
    check(cudaMemGetInfo(&free_bytes, &total_bytes), "cudaMemGetInfo");
    std::size_t usable = total_bytes / 4 * 3;
    // Made first: the chunks get what the resident vectors leave. Unlike the chunks, they
    // cannot be split: a run whose vectors do not fit is refused here (cuda-resident), not at
    // a failed allocation, or keeps them on the host (cuda).
    const int kept = resident_nodes_kept(resident, net_.num_params(), usable, name_);
    if (kept > 0) {
      store_ = std::make_unique<DeviceResidentStore>(kept, net_.num_params(), stream_.stream, bus_);
      store_->use_plain_mixing_kernel(choices.plain_mixing_kernel);
      store_->use_vector_programs(choices.vector_programs);
      if constexpr (kCanFuse) {
        fuse_layers_ =
            choices.steps ? std::clamp(choices.step_layers, 0, net_.deferrable_layers()) : 0;
        fused_prefetch_ = choices.prefetch;
        fused_sums_first_ = choices.sums_first;
        mix_forward_ = choices.mixing && batch_size <= kMixedExamples;
        mix_min_blocks_per_sm_ = choices.mixing_min_blocks_per_sm;
        store_->on_gradient_read([this] { settle_deferred(); });
      }
      usable -= static_cast<std::size_t>(kept) *
                resident_bytes_per_node(net_.num_params(), resident.vectors_per_node);
    }
    usable -= std::min(usable, train_features.size() * sizeof(float));
    if (kept > 0) { // the evaluations' chunk buffers (evaluate_resident)
      eval_bytes_ = std::max(kEvalBytes, usable / 8);
      usable -= std::min(usable, eval_bytes_ - kEvalBytes); // its first 1 GB: the spare quarter's
    }
    const std::size_t fits = usable / bytes_per_node();
    // The pinned staging buffers (models up, gradients down) hold a chunk's nodes: at most
    // kStagingBytes each, so that a huge batch pins a bounded part of the host's memory.
    const std::size_t staged = std::max<std::size_t>(
        1, kStagingBytes / std::max<std::size_t>(1, net_.num_params() * sizeof(float)));
    max_nodes_ = static_cast<int>(std::clamp<std::size_t>(
        std::min(fits, staged), 1,
        std::min<std::size_t>(kMaxGridY, static_cast<std::size_t>(max_nodes_per_batch))));
    if (choices.preload_kernels)
      prepare_before_the_run(kept);
  }

  void compute(std::span<GradientJob> jobs) override {
    if (losses_in_flight_)
      throw std::logic_error("device gradients: a batch started before the last one's losses "
                             "were collected");
    const bool resident = resident_jobs(jobs);
    if (store_) // the engine thread's steps queued before this batch, before its kernels
      guarded([&] { store_->flush_program(); });
    if (resident)
      guarded([&] {
        settle_deferred();     // a batch without finish(): its pass's buffers are reused now
        std::size_t offer = 0; // the first layer's weights, for the forward pass to mix
        if constexpr (kCanFuse)
          if (mix_forward_ && mixed_forward_fills(jobs.size(), net_.first_layer_outputs(),
                                                  sm_count_, mix_min_blocks_per_sm_))
            offer = net_.first_layer_weights();
        phases_.batch_started(stream_.stream);
        store_->run_mixes(jobs, offer);
        phases_.mixing_queued(stream_.stream);
      });
    try {
      for_each_job_chunk(
          jobs, batch_size_, group_,
          [this](std::size_t nodes) {
            reserve(nodes);
            return capacity_;
          },
          [this, jobs](const std::size_t* ids, int count, int n) { run(jobs, ids, count, n); },
          resident);
    } catch (...) {
      if (resident) // the models whole again, as before the first layer was left
        guarded([&] { store_->settle_first_layer_mix(); });
      throw;
    }
    if (resident) // a mixing the chunks did not take (none ran): before anything reads a model
      guarded([&] {
        store_->settle_first_layer_mix();
        phases_.pass_queued(stream_.stream);
      });
  }

  // Turned on, not necessarily run: a batch takes it where its mixing is the plain one
  // (DeviceResidentStore::run_mixes) and it is one chunk of at most 32 examples a node.
  std::string kernel_notes() const override {
    std::string notes = mix_forward_ ? "first layer's mixing in its forward pass turned on" : "";
    if constexpr (requires { net_.kernel_note(); })
      if (const std::string note = net_.kernel_note(); !note.empty())
        notes += (notes.empty() ? "" : "; ") + note;
    if (store_ && !store_->plain_mixing_kernel())
      notes += (notes.empty() ? "" : "; ") +
               std::string("the plain mixing in the kernel of every mixing");
    if (preload_)
      notes += (notes.empty() ? "" : "; ") + preload_note();
    if (store_ && !store_->vector_programs())
      notes += (notes.empty() ? "" : "; ") + std::string("a kernel per element-wise step");
    if constexpr (kCanFuse)
      if (store_ && fuse_layers_ == 1 && net_.deferrable_layers() > 1)
        notes += (notes.empty() ? "" : "; ") + std::string("the first layer's steps alone fused");
    if constexpr (kCanFuse)
      if (store_ && fuse_layers_ > 0 && !fused_prefetch_)
        notes += (notes.empty() ? "" : "; ") +
                 std::string("the fused steps' model and momentum loaded after the sums");
    if constexpr (kCanFuse)
      if (store_ && fuse_layers_ > 0 && fused_prefetch_ && !fused_sums_first_)
        notes += (notes.empty() ? "" : "; ") +
                 std::string("the fused steps' sums' inputs copied after their tiles");
    return notes;
  }

  // With the resident phases that completed, waiting for the last steps (the run's end). A
  // device that failed keeps the phases read before (bus_'s): the trace of a failed run is
  // still written, and the failure reported, not this.
  TransferStats transfers() const override {
    TransferStats sums = bus_;
    try {
      set_phases(sums, phases_.harvest(true));
    } catch (const std::exception&) {
    }
    return sums;
  }
  std::string device_name() const override { return name_; }
  ResidentVectors* resident() override { return store_.get(); }

  // Per-node accuracies of the resident models, in place, for a network with an evaluation
  // pass (the MLP/softmax, LeNet/CNN and ResNet ones): the examples go up once per run (the
  // same set each time), then the nodes in chunks whose activations fit eval_bytes_ (and at
  // most as many as a training chunk: max_nodes_per_batch, which tests lower); only each
  // node's loss sum and correct count come down.
  bool evaluate_resident(std::span<const float> features, std::span<const std::int32_t> labels,
                         std::span<EvalResult> out) override {
    if constexpr (requires(const Network& net) { net.eval_scratch_floats(1); }) {
      if (!store_ || labels.empty())
        return false;
      if (out.size() != store_->nodes() ||
          features.size() != labels.size() * static_cast<std::size_t>(net_.input_features()))
        throw std::invalid_argument("device evaluation: the examples or results do not fit");
      guarded([&] {
        store_->flush_program(); // the steps queued before, on the rows evaluated
        evaluate_guarded(store_->model_rows(), features, labels, out);
      });
      return true;
    } else {
      return false;
    }
  }
  // Host models (the engine's averaged model; node models kept on the host) on the
  // examples, by the same pass: up to kEvalModelBytes of them (and at most a training
  // chunk's nodes, max_nodes_) go up at a time, each one's loss sum and correct count come
  // down.
  bool evaluate_models(std::span<const std::span<const float>> models,
                       std::span<const float> features, std::span<const std::int32_t> labels,
                       std::span<EvalResult> out) override {
    if constexpr (requires(const Network& net) { net.eval_scratch_floats(1); }) {
      if (labels.empty() || models.empty())
        return false;
      const std::size_t P = net_.num_params();
      if (out.size() != models.size() ||
          std::ranges::any_of(models, [P](std::span<const float> m) { return m.size() != P; }) ||
          features.size() != labels.size() * static_cast<std::size_t>(net_.input_features()))
        throw std::invalid_argument("device evaluation: the models or the examples do not fit");
      const std::size_t chunk =
          std::clamp<std::size_t>(kEvalModelBytes / (P * sizeof(float)), 1,
                                  std::min(models.size(), static_cast<std::size_t>(max_nodes_)));
      guarded([&] {
        eval_models_.resize(chunk * P, "cudaMalloc (evaluated models)");
        for (std::size_t first = 0; first < models.size(); first += chunk) {
          const std::size_t count = std::min(chunk, models.size() - first);
          // Stream-ordered after the last chunk's pass, which read the buffer; models that
          // lie one after another on the host (the engine's node models) in one copy.
          for (std::size_t k = 0; k < count;) {
            std::size_t run = 1;
            while (k + run < count &&
                   models[first + k + run].data() == models[first + k].data() + run * P)
              ++run;
            check(cudaMemcpyAsync(eval_models_.data + k * P, models[first + k].data(),
                                  run * P * sizeof(float), cudaMemcpyHostToDevice, stream_.stream),
                  "cudaMemcpyAsync (evaluated models)");
            k += run;
          }
          bus_.host_to_device_bytes += static_cast<std::int64_t>(count * P * sizeof(float));
          evaluate_guarded(eval_models_.data, features, labels, out.subspan(first, count));
        }
      });
      return true;
    } else {
      return false;
    }
  }
  // The batch's queued local steps; with the first layers' weight gradients left for them
  // (run_resident), fused with them when every job's step is queued, else after them (their
  // GEMMs before the steps' phase starts).
  void finish(std::span<GradientJob> jobs) override {
    if (!resident_jobs(jobs))
      return;
    guarded([&] {
      store_->flush_program(); // steps queued since compute() (none today), first
      if (deferred_ && store_->steps_queued_for(jobs)) {
        const FusedLayers layers = deferred_->layers;
        deferred_.reset();
        phases_.steps_started(stream_.stream);
        store_->run_steps(jobs, &layers);
      } else {
        settle_deferred();
        phases_.steps_started(stream_.stream);
        store_->run_steps(jobs);
      }
      phases_.steps_queued(stream_.stream);
    });
  }

  // The losses of a resident batch that was one chunk, which run_resident left in flight so
  // that the hooks and finish() ran while the pass computed: here the host waits for them
  // (not for the local steps finish() queued after the pass).
  void collect(std::span<GradientJob> jobs) override {
    if (!losses_in_flight_)
      return;
    losses_in_flight_ = false;
    guarded([&] { check(cudaEventSynchronize(marks_[3].event), "cudaEventSynchronize"); });
    take_losses(jobs, jobs.size());
    set_phases(bus_, phases_.harvest(false));
  }

private:
  static constexpr bool kCanFuse = requires(const Network& net) {
    net.fused_layers(BatchCommon{}, nullptr, 1, 0, true, 1);
  };

  // Before the run's clock (KernelChoices::preload_kernels): every kernel of this translation
  // unit's module loaded (the network's, the store's), and on a resident backend the buffers
  // of a batch of every kept node made, as a synchronous round's first batch would make
  // them, and one pass run through them on zero models at example 0, so that cuBLAS loads
  // the kernels of those products and cuBLASLt makes their plans here, not in the first
  // round. The pass writes only the chunk buffers, which every pass writes before it reads
  // them; it takes every layer's weight gradient, a superset of a fused pass's products.
  void prepare_before_the_run(int kept) {
    preload_ = preload_module_kernels(reinterpret_cast<const void*>(&squared_distance_kernel));
    if (kept <= 0)
      return;
    try {
      const int count = std::min(kept, max_nodes_);
      const auto nodes = static_cast<std::size_t>(count);
      const auto n = static_cast<std::size_t>(batch_size_);
      const cudaStream_t s = stream_.stream;
      reserve(nodes);
      check(cudaMemsetAsync(idx_.data, 0, nodes * n * sizeof(std::uint32_t), s),
            "cudaMemsetAsync (warm-up indices)");
      check(cudaMemsetAsync(params_.data, 0, nodes * net_.num_params() * sizeof(float), s),
            "cudaMemsetAsync (warm-up models)");
      const BatchCommon common{train_.data, labels_.data,      params_.data, grads_.data,
                               idx_.data,   column_loss_.data, loss_.data};
      net_.run(blas_.blas, s, common, scratch_pointers_.data(), count, batch_size_);
      check(cudaGetLastError(), "kernel launch (warm-up pass)");
      check(cudaStreamSynchronize(s), "cudaStreamSynchronize (warm-up pass)");
      warmed_nodes_ = count;
    } catch (const std::exception& e) {
      preload_->failure += (preload_->failure.empty() ? "" : "; ") +
                           std::string("the warm-up pass failed: ") + e.what();
    }
  }

  // What prepare_before_the_run did, and what failed.
  std::string preload_note() const {
    std::string note = std::to_string(preload_->kernels) + " kernels loaded";
    if (warmed_nodes_ > 0)
      note += " and a pass of " + std::to_string(warmed_nodes_) + " nodes run";
    note += " before the run";
    if (!preload_->failure.empty())
      note += " (" + preload_->failure + ")";
    return note;
  }

  static void set_phases(TransferStats& bus, ResidentPhaseTimer::Seconds t) {
    bus.mixing_seconds = t.mixing;
    bus.steps_seconds = t.steps;
    bus.idle_seconds = t.idle;
  }

  // The weight gradients a resident pass left for fused steps, computed now instead (on the
  // stream: the local steps or a pairwise method's step read them after).
  void settle_deferred() {
    if constexpr (kCanFuse) {
      if (!deferred_)
        return;
      const Deferred d = *deferred_;
      deferred_.reset();
      const FusedLayerPlan& first = d.layers.plan[0];
      net_.deferred_weight_gradients(blas_.blas, stream_.stream, d.common, scratch_pointers_.data(),
                                     d.count, first.n, first.x != nullptr, d.layers.count);
      check(cudaGetLastError(), "kernel launch (deferred weight gradients)");
    }
  }

  std::size_t bytes_per_node() const {
    std::size_t floats = 2 * net_.num_params();
    for (std::size_t f : net_.scratch_floats(batch_size_))
      floats += f;
    return floats * sizeof(float) + static_cast<std::size_t>(batch_size_) * (4 + 8) + 8;
  }

  void reserve(std::size_t nodes) {
    if (nodes <= capacity_)
      return;
    std::size_t c = std::max<std::size_t>(capacity_, 1);
    while (c < nodes)
      c *= 2;
    c = std::min<std::size_t>(c, static_cast<std::size_t>(max_nodes_));
    const auto n = static_cast<std::size_t>(batch_size_);
    // Zero until every buffer is the new size: a failed allocation (which frees the old one
    // first) leaves no stale capacity for the next batch to write through.
    capacity_ = 0;
    params_.resize(c * net_.num_params(), "cudaMalloc (node models)");
    grads_.resize(c * net_.num_params(), "cudaMalloc (gradients)");
    const std::vector<std::size_t> floats = net_.scratch_floats(batch_size_);
    for (std::size_t k = 0; k < scratch_.size(); ++k) {
      scratch_[k].resize(c * floats[k], "cudaMalloc (activations)");
      scratch_pointers_[k] = scratch_[k].data;
    }
    idx_.resize(c * n, "cudaMalloc (indices)");
    if (!store_) { // a resident run's models and gradients never come to the host
      host_params_.resize(c * net_.num_params(), "cudaMallocHost (node models)");
      host_grads_.resize(c * net_.num_params(), "cudaMallocHost (gradients)");
    }
    column_loss_.resize(c * n, "cudaMalloc (losses)");
    loss_.resize(c, "cudaMalloc (losses)");
    host_idx_.resize(c * n, "cudaMallocHost (indices)");
    host_loss_.resize(c, "cudaMallocHost (losses)");
    capacity_ = c;
  }

  // out.size() models, rows[i * P..), on the examples.
  void evaluate_guarded(const float* rows, std::span<const float> features,
                        std::span<const std::int32_t> labels, std::span<EvalResult> out) {
    try {
      evaluate_unguarded(rows, features, labels, out);
    } catch (...) {
      eval_set_ = {}; // its upload may not have finished: send it again next time
      throw;
    }
  }

  void evaluate_unguarded(const float* rows, std::span<const float> features,
                          std::span<const std::int32_t> labels, std::span<EvalResult> out) {
    const cudaStream_t s = stream_.stream;
    const int n = static_cast<int>(labels.size());
    // The set kept from an earlier call serves every prefix of it (the per-node evaluations
    // take the first per_node_samples of the examples the averaged model is evaluated on);
    // the engine's examples stay the same host arrays for the run.
    if (eval_set_.features != features.data() || eval_set_.labels != labels.data() ||
        eval_set_.examples < labels.size()) {
      eval_x_.resize(features.size(), "cudaMalloc (evaluation set)");
      eval_labels_.resize(labels.size(), "cudaMalloc (evaluation labels)");
      check(cudaMemcpyAsync(eval_x_.data, features.data(), features.size() * sizeof(float),
                            cudaMemcpyHostToDevice, s),
            "cudaMemcpyAsync (evaluation set)");
      check(cudaMemcpyAsync(eval_labels_.data, labels.data(), labels.size() * sizeof(std::int32_t),
                            cudaMemcpyHostToDevice, s),
            "cudaMemcpyAsync (evaluation labels)");
      bus_.host_to_device_bytes += static_cast<std::int64_t>(features.size() * sizeof(float) +
                                                             labels.size() * sizeof(std::int32_t));
      eval_set_ = {features.data(), labels.data(), labels.size()};
    }
    // At most `slice` examples a pass (a network's max_eval_examples, else all of them),
    // each node's sums added up over the slices in order.
    int slice = n;
    if constexpr (requires(const Network& net) { net.max_eval_examples(); })
      slice = std::min(n, net_.max_eval_examples());
    const auto slice_ = static_cast<std::size_t>(slice);
    const std::vector<std::size_t> floats = net_.eval_scratch_floats(slice);
    std::size_t per_node =
        slice_ * (sizeof(double) + sizeof(std::int32_t)) + sizeof(double) + sizeof(std::int64_t);
    for (const std::size_t f : floats)
      per_node += f * sizeof(float);
    const std::size_t nodes = out.size();
    const std::size_t chunk = std::clamp<std::size_t>(
        eval_bytes_ / per_node, 1, std::min(nodes, static_cast<std::size_t>(max_nodes_)));
    eval_act_.resize(floats.size());
    std::vector<float*> act(floats.size());
    for (std::size_t k = 0; k < floats.size(); ++k) {
      eval_act_[k].resize(chunk * floats[k], "cudaMalloc (evaluation activations)");
      act[k] = eval_act_[k].data;
    }
    eval_column_loss_.resize(chunk * slice_, "cudaMalloc (evaluation)");
    eval_column_correct_.resize(chunk * slice_, "cudaMalloc (evaluation)");
    eval_loss_.resize(chunk, "cudaMalloc (evaluation)");
    eval_correct_.resize(chunk, "cudaMalloc (evaluation)");
    std::vector<double> loss(chunk), loss_sum(chunk);
    std::vector<std::int64_t> correct(chunk), correct_sum(chunk);
    const std::size_t P = net_.num_params();
    const auto features_per_example = static_cast<std::size_t>(net_.input_features());
    for (std::size_t first = 0; first < nodes; first += chunk) {
      const std::size_t count = std::min(chunk, nodes - first);
      std::fill(loss_sum.begin(), loss_sum.end(), 0.0);
      std::fill(correct_sum.begin(), correct_sum.end(), 0);
      for (int k0 = 0; k0 < n; k0 += slice) {
        const int m = std::min(slice, n - k0);
        const MlpEvalBuffers buf{rows + first * P,
                                 eval_x_.data + static_cast<std::size_t>(k0) * features_per_example,
                                 eval_labels_.data + k0,
                                 act.data(),
                                 eval_column_loss_.data,
                                 eval_column_correct_.data,
                                 eval_loss_.data,
                                 eval_correct_.data};
        net_.evaluate(blas_.blas, s, buf, static_cast<int>(count), m);
        check(cudaGetLastError(), "kernel launch (evaluation)");
        check(cudaMemcpyAsync(loss.data(), eval_loss_.data, count * sizeof(double),
                              cudaMemcpyDeviceToHost, s),
              "cudaMemcpyAsync (evaluation)");
        check(cudaMemcpyAsync(correct.data(), eval_correct_.data, count * sizeof(std::int64_t),
                              cudaMemcpyDeviceToHost, s),
              "cudaMemcpyAsync (evaluation)");
        check(cudaStreamSynchronize(s), "cudaStreamSynchronize");
        bus_.device_to_host_bytes +=
            static_cast<std::int64_t>(count * (sizeof(double) + sizeof(std::int64_t)));
        for (std::size_t b = 0; b < count; ++b) {
          loss_sum[b] += loss[b];
          correct_sum[b] += correct[b];
        }
      }
      for (std::size_t b = 0; b < count; ++b)
        out[first + b] = EvalResult{loss_sum[b], correct_sum[b], n};
    }
  }

  // Jobs job_ids[0..count) all have batch size n; count <= capacity_. A failure leaves no
  // copy or kernel in flight (the next batch reuses the buffers).
  void run(std::span<GradientJob> jobs, const std::size_t* job_ids, int count, int n) {
    guarded([&] {
      if (resident_jobs(jobs))
        run_resident(jobs, job_ids, count, n);
      else
        run_unguarded(jobs, job_ids, count, n);
    });
  }

  // f(), leaving no copy or kernel in flight if it throws.
  template <class F> void guarded(const F& f) {
    try {
      f();
    } catch (...) {
      cudaStreamSynchronize(stream_.stream);
      cudaGetLastError();
      throw;
    }
  }

  // Jobs of an algorithm that attached to the store: no host model or gradient spans.
  bool resident_jobs(std::span<const GradientJob> jobs) const {
    return store_ && !jobs.empty() && jobs.front().params.empty();
  }

  // A chunk whose models and gradients stay on the device, taken in node order: indices up,
  // the pass on the nodes' own rows (or on copies gathered into the pass's rows and scattered
  // back, when the chunk's nodes are not one range), losses down.
  void run_resident(std::span<GradientJob> jobs, const std::size_t* chunk_ids, int count, int n) {
    const auto nodes = static_cast<std::size_t>(count);
    const cudaStream_t s = stream_.stream;
    const bool consecutive = sort_by_node(jobs, chunk_ids, count, node_order_);
    const std::size_t* job_ids = node_order_.data();
    for (std::size_t b = 0; b < nodes; ++b) {
      const GradientJob& job = jobs[job_ids[b]];
      if (std::any_of(job.indices.begin(), job.indices.end(),
                      [this](std::uint32_t i) { return i >= examples_; }))
        throw std::invalid_argument("device gradients: a job's minibatch indices do not fit");
      std::copy(job.indices.begin(), job.indices.end(), host_idx_.data + b * n);
    }
    check(cudaEventRecord(marks_[0].event, s), "cudaEventRecord");
    check(cudaMemcpyAsync(idx_.data, host_idx_.data, nodes * n * sizeof(std::uint32_t),
                          cudaMemcpyHostToDevice, s),
          "cudaMemcpyAsync (indices)");
    // The first layer's mixing that run_mixes left joins this pass only where the chunk is
    // the whole batch on the nodes' own rows; else it runs first, before anything (the
    // gather of the chunk's models into the pass's rows among them) reads a model.
    const bool whole = consecutive && nodes == jobs.size();
    if (store_->first_layer_left() && !(whole && n <= kMixedExamples))
      store_->settle_first_layer_mix();
    const auto rows =
        store_->chunk_rows(jobs, job_ids, count, consecutive, params_.data, grads_.data);
    check(cudaEventRecord(marks_[1].event, s), "cudaEventRecord");
    bus_.host_to_device_bytes += static_cast<std::int64_t>(nodes * n * sizeof(std::uint32_t));
    const BatchCommon common{train_.data, labels_.data,      rows.params, rows.grads,
                             idx_.data,   column_loss_.data, loss_.data};
    // The whole batch in one chunk, on the nodes' own rows: its first layers' weight
    // gradients can wait for the local steps (finish), whose plans the hooks make after this
    // pass, and the first layer's mixing that run_mixes left can join the forward product.
    if constexpr (kCanFuse) {
      const int defer = store_->can_fuse() && whole ? fuse_layers_ : 0;
      const bool forward_done = store_->first_layer_left(); // whole, n <= 32: above
      if (forward_done)
        store_->run_mixed_forward(net_.mixed_forward(
            train_.data, idx_.data, scratch_pointers_.data(), n, jobs[job_ids[0]].node));
      net_.run(blas_.blas, s, common, scratch_pointers_.data(), count, n, defer, forward_done);
      if (defer > 0) {
        deferred_ = Deferred{common, count,
                             net_.fused_layers(common, scratch_pointers_.data(), n,
                                               jobs[job_ids[0]].node, !forward_done, defer)};
        deferred_->layers.prefetch = fused_prefetch_;
        deferred_->layers.sums_first = fused_sums_first_;
      }
    } else {
      net_.run(blas_.blas, s, common, scratch_pointers_.data(), count, n);
    }
    if (!rows.in_place)
      store_->scatter(count, grads_.data);
    check(cudaGetLastError(), "kernel launch");
    check(cudaEventRecord(marks_[2].event, s), "cudaEventRecord");
    check(cudaMemcpyAsync(host_loss_.data, loss_.data, nodes * sizeof(double),
                          cudaMemcpyDeviceToHost, s),
          "cudaMemcpyAsync (losses)");
    check(cudaEventRecord(marks_[3].event, s), "cudaEventRecord");
    bus_.device_to_host_bytes += static_cast<std::int64_t>(nodes * sizeof(double));
    if (nodes == jobs.size()) { // the whole batch: its losses are collected after finish()
      losses_in_flight_ = true;
      return;
    }
    check(cudaStreamSynchronize(s), "cudaStreamSynchronize");
    take_losses(jobs, nodes);
  }

  // The losses of the chunk of `nodes` jobs run last (node_order_'s job ids), once its
  // download is complete, and its times.
  void take_losses(std::span<GradientJob> jobs, std::size_t nodes) {
    for (std::size_t b = 0; b < nodes; ++b)
      jobs[node_order_[b]].loss = host_loss_.data[b];
    bus_.upload_seconds += seconds_between(marks_[0], marks_[1]);
    bus_.compute_seconds += seconds_between(marks_[1], marks_[2]);
    bus_.download_seconds += seconds_between(marks_[2], marks_[3]);
  }

  void run_unguarded(std::span<GradientJob> jobs, const std::size_t* job_ids, int count, int n) {
    if (store_) // its staging buffers were never made: the algorithm attached (can_attach_resident)
      throw std::logic_error("device gradients: host jobs on a resident backend");
    const std::size_t P = net_.num_params();
    const auto nodes = static_cast<std::size_t>(count);
    const cudaStream_t s = stream_.stream;
    for (std::size_t b = 0; b < nodes; ++b) {
      const GradientJob& job = jobs[job_ids[b]];
      // An index past the training set would be an illegal address on the device, which
      // ends the whole CUDA context: checked here.
      if (job.params.size() != P || job.grad.size() != P ||
          std::any_of(job.indices.begin(), job.indices.end(),
                      [this](std::uint32_t i) { return i >= examples_; }))
        throw std::invalid_argument(
            "device gradients: a job's model, gradient or minibatch indices do not fit");
    }
    // The models go up from pinned memory, which the device reads at the bus's speed (a
    // copy from the jobs' own pageable memory would be staged by the driver one chunk at a
    // time, on one thread). The staging copies run on every core, in pieces, each piece's
    // copy to the device running while the next piece is staged; the gradients come down
    // the same way, each piece unstaged while the next is on the bus.
    using Clock = std::chrono::steady_clock;
    const std::size_t pieces = std::min<std::size_t>(nodes, kStagingPieces);
    const auto piece_begin = [nodes, pieces](std::size_t k) { return k * nodes / pieces; };
    const auto staged = [this](Clock::time_point t0) {
      bus_.staging_seconds += std::chrono::duration<double>(Clock::now() - t0).count();
    };
    check(cudaEventRecord(marks_[0].event, s), "cudaEventRecord");
    for (std::size_t k = 0; k < pieces; ++k) {
      const std::size_t lo = piece_begin(k), hi = piece_begin(k + 1);
      const auto t0 = Clock::now();
      each_span(lo, hi, P, [&](std::size_t b, std::size_t from, std::size_t to) {
        const GradientJob& job = jobs[job_ids[b]];
        std::copy(job.params.begin() + from, job.params.begin() + to,
                  host_params_.data + b * P + from);
        if (from == 0)
          std::copy(job.indices.begin(), job.indices.end(), host_idx_.data + b * n);
      });
      staged(t0);
      check(cudaMemcpyAsync(params_.data + lo * P, host_params_.data + lo * P,
                            (hi - lo) * P * sizeof(float), cudaMemcpyHostToDevice, s),
            "cudaMemcpyAsync (node models)");
    }
    check(cudaMemcpyAsync(idx_.data, host_idx_.data, nodes * n * sizeof(std::uint32_t),
                          cudaMemcpyHostToDevice, s),
          "cudaMemcpyAsync (indices)");
    check(cudaEventRecord(marks_[1].event, s), "cudaEventRecord");
    bus_.host_to_device_bytes +=
        static_cast<std::int64_t>(nodes * (P * sizeof(float) + n * sizeof(std::uint32_t)));

    const BatchCommon common{train_.data, labels_.data,      params_.data, grads_.data,
                             idx_.data,   column_loss_.data, loss_.data};
    net_.run(blas_.blas, s, common, scratch_pointers_.data(), count, n);
    check(cudaGetLastError(), "kernel launch");
    check(cudaEventRecord(marks_[2].event, s), "cudaEventRecord");

    for (std::size_t k = 0; k < pieces; ++k) {
      const std::size_t lo = piece_begin(k), hi = piece_begin(k + 1);
      check(cudaMemcpyAsync(host_grads_.data + lo * P, grads_.data + lo * P,
                            (hi - lo) * P * sizeof(float), cudaMemcpyDeviceToHost, s),
            "cudaMemcpyAsync (gradients)");
      check(cudaEventRecord(piece_down_[k].event, s), "cudaEventRecord");
    }
    check(cudaMemcpyAsync(host_loss_.data, loss_.data, nodes * sizeof(double),
                          cudaMemcpyDeviceToHost, s),
          "cudaMemcpyAsync (losses)");
    check(cudaEventRecord(marks_[3].event, s), "cudaEventRecord");
    for (std::size_t k = 0; k < pieces; ++k) {
      check(cudaEventSynchronize(piece_down_[k].event), "cudaEventSynchronize");
      const auto t0 = Clock::now();
      each_span(piece_begin(k), piece_begin(k + 1), P,
                [&](std::size_t b, std::size_t from, std::size_t to) {
                  const float* g = host_grads_.data + b * P;
                  std::copy(g + from, g + to, jobs[job_ids[b]].grad.begin() + from);
                });
      staged(t0);
    }
    check(cudaStreamSynchronize(s), "cudaStreamSynchronize");
    bus_.device_to_host_bytes +=
        static_cast<std::int64_t>(nodes * (P * sizeof(float) + sizeof(double)));
    for (std::size_t b = 0; b < nodes; ++b)
      jobs[job_ids[b]].loss = host_loss_.data[b];
    // Device time between the marks; the upload's includes the device waiting for pieces
    // still being staged.
    bus_.upload_seconds += seconds_between(marks_[0], marks_[1]);
    bus_.compute_seconds += seconds_between(marks_[1], marks_[2]);
    bus_.download_seconds += seconds_between(marks_[2], marks_[3]);
  }

  // f(b, from, to) over spans [from, to) of each node b in [lo, hi)'s P floats, in
  // parallel: spans, not whole nodes, so that a piece of a few nodes still keeps every core
  // copying (each call writes its own memory).
  template <class F>
  static void each_span(std::size_t lo, std::size_t hi, std::size_t P, const F& f) {
    constexpr std::size_t kSpan = std::size_t{1} << 16; // floats: 256 KB
    const std::size_t spans = std::max<std::size_t>(1, (P + kSpan - 1) / kSpan);
    tbb::parallel_for(tbb::blocked_range<std::size_t>(0, (hi - lo) * spans), [&](const auto& r) {
      for (std::size_t j = r.begin(); j != r.end(); ++j) {
        const std::size_t from = j % spans * kSpan;
        f(lo + j / spans, from, std::min(P, from + kSpan));
      }
    });
  }

  Network net_;
  int batch_size_ = 0;
  int max_nodes_ = 1;
  std::size_t examples_ = 0; // in the training set
  std::string name_;
  CudaStream stream_; // before the arrays and the handle: destroyed after them
  BlasHandle blas_;
  DeviceArray<float> train_;
  DeviceArray<std::int32_t> labels_;
  // Sized for capacity_ nodes of one device batch.
  std::size_t capacity_ = 0;
  DeviceArray<float> params_, grads_;
  std::vector<DeviceArray<float>> scratch_;
  std::vector<float*> scratch_pointers_;
  DeviceArray<std::uint32_t> idx_;
  DeviceArray<double> column_loss_, loss_;
  PinnedArray<float> host_params_, host_grads_;
  PinnedArray<std::uint32_t> host_idx_;
  PinnedArray<double> host_loss_;
  std::vector<std::size_t> group_;
  std::vector<std::size_t> node_order_; // a resident chunk's jobs in node order
  static constexpr std::size_t kStagingPieces = 8;
  static constexpr std::size_t kStagingBytes = std::size_t{2} << 30; // per direction
  CudaEvent marks_[4]; // before the upload, after it, after the kernels, after the download
  mutable ResidentPhaseTimer phases_; // read at the run's end by transfers()
  bool losses_in_flight_ = false;     // run_resident left a whole batch's losses for collect()
  std::unique_ptr<DeviceResidentStore> store_; // resident runs (cuda, cuda-resident); after stream_
  int fuse_layers_ = 0;          // kCanFuse and resident: the layers a pass leaves for fused steps
  bool fused_prefetch_ = true;   // KernelChoices::prefetch
  bool fused_sums_first_ = true; // KernelChoices::sums_first
  bool mix_forward_ = false;     // kCanFuse, resident, turned on, minibatches of up to 32
  int sm_count_ = 1;
  int mix_min_blocks_per_sm_ = 0;        // KernelChoices's: fewer blocks per SM mix apart
  std::optional<KernelPreload> preload_; // KernelChoices::preload_kernels: how it went
  int warmed_nodes_ = 0;                 // the nodes of prepare_before_the_run's pass
  struct Deferred {
    BatchCommon common;
    int count = 0;
    FusedLayers layers;
  };
  std::optional<Deferred> deferred_; // a pass's first layers' weight gradients, not yet computed
  // The evaluations' (evaluate_resident's, evaluate_models'): the examples (kept for the
  // run: which host set they are) and a chunk's buffers, eval_bytes_: on cuda-resident an
  // eighth of the usable memory the resident vectors and the training set leave (the training
  // chunks get the rest), at least kEvalBytes, which the quarter of the memory kept spare holds
  // (so that a run whose vectors only just fit does not train one node a chunk to make room
  // for it); on cuda kEvalBytes, and kEvalModelBytes of uploaded models, from that quarter. 1 GB
  // alone held only 9 LeNet nodes on 1,000 examples (112 MB per node, its first
  // convolution's patches 78 MB) and 5 ResNet-20 nodes on 100 (about 200 MB), whose
  // evaluations then ran as many small passes; about 6.9 GiB on an 80 GB H100 at the goal
  // row. A share of the total memory, not of the free memory, so that the chunks (and with
  // them cuBLAS's kernels and the bits of the results) are the same in every run on a GPU.
  static constexpr std::size_t kEvalBytes = std::size_t{1} << 30;
  static constexpr std::size_t kEvalModelBytes = std::size_t{256} << 20;
  std::size_t eval_bytes_ = kEvalBytes;
  struct EvalSet {
    const float* features = nullptr;
    const std::int32_t* labels = nullptr;
    std::size_t examples = 0;
  } eval_set_;
  DeviceArray<float> eval_x_;
  DeviceArray<std::int32_t> eval_labels_;
  DeviceArray<float> eval_models_; // evaluate_models' host models, a chunk at a time
  std::vector<DeviceArray<float>> eval_act_;
  DeviceArray<double> eval_column_loss_, eval_loss_;
  DeviceArray<std::int32_t> eval_column_correct_;
  DeviceArray<std::int64_t> eval_correct_;
  CudaEvent piece_down_[kStagingPieces];
  TransferStats bus_;
};

} // namespace
} // namespace dtsim::cuda
