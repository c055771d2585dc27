// SPDX-License-Identifier: MIT
// ResidentVectors on the device (backends cuda-resident and cuda): the node models, momenta and
// gradients (one row of P floats per node), the live rows (a pairwise method's live models,
// GSGM's table; made on first use), a parameter server's vectors and the gossip messages
// (one buffer per message id) in device memory; the algorithm's queued mixings and local
// steps run as one kernel each per batch, a pairwise method's or a server's steps (apply),
// decodings and own views as one kernel per run of them between other work on the stream
// (vector_program.hpp), in call order, and only the plans (ids, weights, rates) go up.
#pragma once

#include "cuda/device_choco.cuh"
#include "cuda/device_codec.cuh"
#include "cuda/device_memory.cuh"
#include "cuda/fused_layer_step.hpp"
#include "cuda/message_slabs.hpp"
#include "cuda/mixed_first_layer.hpp"
#include "cuda/resident_math.hpp"
#include "cuda/staged_plan.cuh"
#include "cuda/vector_program.hpp"
#include "sim/engine/batched_gradients.hpp"

#include <algorithm>
#include <cuda_pipeline.h>
#include <functional>
#include <memory>
#include <optional>
#include <stdexcept>
#include <string>
#include <utility>
#include <vector>

namespace dtsim::cuda {
namespace {

// out[node] = ||row_node - mean||^2 over P floats, one block per node: each thread's
// partial sum (resident_math.hpp's squared_distance_partial), then a tree over the block in
// a fixed order, so the same rows give the same bits.
__global__ void squared_distance_kernel(const float* rows, const float* mean, std::size_t P,
                                        double* out) {
  __shared__ double part[kDistanceThreads];
  const int t = static_cast<int>(threadIdx.x);
  const float* row = rows + static_cast<std::size_t>(blockIdx.x) * P;
  part[t] = squared_distance_partial(row, mean, P, t, kDistanceThreads);
  __syncthreads();
  for (int width = kDistanceThreads / 2; width > 0; width /= 2) {
    if (t < width)
      part[t] += part[t + width];
    __syncthreads();
  }
  if (t == 0)
    out[blockIdx.x] = part[0];
}

// steps[0 .. count) in order over P floats, a tile of kProgramTile elements per thread
// (each_tile's shape). After an encoding, the block sums its threads' squares by
// block_pair_tree's levels (in parallel, each level behind a barrier) and leaves the pair in
// the encoding's slot; every thread reaches every barrier (the steps are the same for the
// block, and a thread past P has empty tiles).
static_assert(kThreads == kProgramThreads, "the programs' blocks are the element kernels'");
__device__ inline void run_program_steps(const ProgramStep* steps, int count, std::size_t P) {
  // Two float arrays, not EncodeSquares: a __shared__ array is never constructed, and a type
  // with member initializers would say otherwise.
  __shared__ float norms[kProgramThreads], errors[kProgramThreads];
  const int t = static_cast<int>(threadIdx.x);
  const std::size_t e0 =
      static_cast<std::size_t>(blockIdx.x) * (kProgramTile * kProgramThreads) + threadIdx.x;
  for (int i = 0; i < count; ++i) {
    const ProgramStep& k = steps[i];
    EncodeSquares sq;
    step_tile<kProgramTile>(k, P, e0, static_cast<std::size_t>(kProgramThreads), sq);
    if (k.kind != ProgramStep::Kind::encode)
      continue;
    norms[t] = sq.norm;
    errors[t] = sq.error;
    __syncthreads();
    for (int width = kProgramThreads / 2; width > 0; width /= 2) {
      if (t < width) {
        norms[t] += norms[t + width];
        errors[t] += errors[t + width];
      }
      __syncthreads();
    }
    if (t == 0) {
      k.partials[2 * blockIdx.x] = errors[0];
      k.partials[2 * blockIdx.x + 1] = norms[0];
    }
    __syncthreads(); // the sums read before the next encoding writes the arrays
  }
}

// A program. __grid_constant__: the steps are read where the parameters are, not copied per
// thread.
template <int N>
__global__ void vector_program_kernel(const __grid_constant__ BasicVectorProgram<N> program,
                                      std::size_t P) {
  run_program_steps(program.steps, program.count, P);
}

// A program of one step, with that step's parameters alone, not a whole program's 3.8 KB: a
// kernel per step (DTSIM_CUDA_VECTOR_PROGRAMS=0) launched as lightly as before programs,
// and a program that holds one step.
__global__ void vector_step_kernel(const __grid_constant__ ProgramStep step, std::size_t P) {
  run_program_steps(&step, 1, P);
}

// cp.async of the float at from[at] to shared memory at dst, or of a zero where `valid` is
// false (from[at] then unread: the source is the array's start): CopyOrZero's contract, the
// size to read in a register. __pipeline_memcpy_async's zero fill had become a branch between
// two copies.
struct CopyAsync {
  __device__ __forceinline__ void operator()(float* dst, const float* from, std::size_t at,
                                             bool valid) const {
    const auto to = static_cast<unsigned>(__cvta_generic_to_shared(dst));
    asm volatile("cp.async.ca.shared.global [%0], [%1], 4, %2;\n" ::"r"(to),
                 "l"(from + (valid ? at : 0)), "r"(valid ? 4 : 0)
                 : "memory");
  }
};

// The fused kernels' block: a tile (outputs from o0, inputs from i0) of step entry
// first_entry + y's weights, and thread t.
struct FusedBlock {
  int b, t, o0, i0;
};
__device__ FusedBlock fused_block(const FusedLayerPlan& f, int first_entry) {
  const int tiles_out = fused_tiles_out(f);
  const int tile = static_cast<int>(blockIdx.x);
  return {first_entry + static_cast<int>(blockIdx.y), static_cast<int>(threadIdx.x),
          tile % tiles_out * kFusedTile, tile / tiles_out * kFusedTile};
}

// The block's gradient sums of its tile over the minibatch, loaded kFusedExamples examples at
// a time into s_dz and s_x.
__device__ void fused_block_sums(const StepBatch& s, const FusedLayerPlan& f, const FusedBlock& k,
                                 float* s_dz, float* s_x, FusedAccumulators& acc) {
  const int p = s.node[k.b] - f.first_node;
  for (int k0 = 0; k0 < f.n; k0 += kFusedExamples) {
    const int kc = f.n - k0 < kFusedExamples ? f.n - k0 : kFusedExamples;
    fused_load(f, p, k.o0, k.i0, k0, kc, k.t, s_dz, s_x);
    __syncthreads();
    fused_accumulate(k.t, s_dz, s_x, kc, acc);
    __syncthreads();
  }
}

// A layer's weights' fused local step (fused_layer_step.hpp), one block a tile: the earlier
// kernel, kept for measurements against the prefetching one (DTSIM_CUDA_FUSED_PREFETCH=0).
// Three blocks per SM, as it had before with_step_rule's second copy of its step took 110
// registers a thread; ptxas -v now puts it at 80 with 84 bytes spilled.
__global__ void __launch_bounds__(kFusedThreads, 3)
    fused_layer_step_kernel(StepBatch s, FusedLayerPlan f, float* grads, const float* models,
                            float* momenta, std::size_t P, int first_entry) {
  __shared__ float s_dz[kFusedShared];
  __shared__ __align__(16) float s_x[kFusedShared]; // fused_inputs reads it 16 bytes at a time
  const FusedBlock k = fused_block(f, first_entry);
  FusedAccumulators acc{};
  fused_block_sums(s, f, k, s_dz, s_x, acc);
  fused_step(s, f, grads, models, momenta, P, k.b, k.o0, k.i0, k.t, acc);
}

// The same with the block's tiles of the model and momentum copied into shared memory
// (cp.async, fused_tile_copy) while its gradient sums run, so that their DRAM latency hides
// behind the sums without the registers that loading them early took (fused_step's note).
// With SumsFirst (a minibatch of at most kFusedExamples, one load), the sums' inputs are
// copied the same way, before the tiles and in a group of their own, so that the sums wait
// for their 16 KB alone, not for the loads queued behind the tiles' 32 KB: launched only for
// a minibatch of at most kFusedExamples (run_steps checks), whose one load its shared arrays
// hold. 48 KB of static shared memory a block.
template <bool SumsFirst>
__global__ void __launch_bounds__(kFusedThreads)
    fused_layer_step_prefetch_kernel(StepBatch s, FusedLayerPlan f, float* grads,
                                     const float* models, float* momenta, std::size_t P,
                                     int first_entry) {
  __shared__ float s_dz[kFusedShared];
  __shared__ __align__(16) float s_x[kFusedShared]; // fused_inputs reads it 16 bytes at a time
  __shared__ float s_w[kFusedTileFloats], s_m[kFusedTileFloats];
  const FusedBlock k = fused_block(f, first_entry);
  if constexpr (SumsFirst) {
    fused_load(f, s.node[k.b] - f.first_node, k.o0, k.i0, 0, f.n, k.t, s_dz, s_x, CopyAsync{});
    __pipeline_commit();
  }
  fused_tile_copy(f, step_rows(s, grads, models, momenta, P, k.b), k.o0, k.i0, k.t, s_w, s_m,
                  CopyAsync{});
  __pipeline_commit();
  FusedAccumulators acc{};
  if constexpr (SumsFirst) {
    __pipeline_wait_prior(1); // the sums' inputs (the barrier: every thread's)
    __syncthreads();
    fused_accumulate(k.t, s_dz, s_x, f.n, acc);
  } else {
    fused_block_sums(s, f, k, s_dz, s_x, acc);
  }
  __pipeline_wait_prior(0); // this thread's copies; the barrier makes every thread's visible
  __syncthreads();
  fused_step_from_tiles(s, f, step_rows(s, grads, models, momenta, P, k.b), k.o0, k.i0, k.t, acc,
                        s_w, s_m);
}

// The first layer's mixing fused with its forward product (mixed_first_layer.hpp): block x a
// slab of mixing entry first_entry + y's outputs.
__global__ void __launch_bounds__(kMixedThreads)
    mixed_forward_kernel(MixBatch m, MixedForwardPlan f, float* models, std::size_t P,
                         int first_entry) {
  __shared__ __align__(16) float s_w[kMixedWeightFloats];
  __shared__ __align__(16) float s_x[kMixedExampleFloats];
  const int b = first_entry + static_cast<int>(blockIdx.y);
  const int t = static_cast<int>(threadIdx.x);
  const int o0 = static_cast<int>(blockIdx.x) * kMixedOut;
  MixedAccumulators acc{};
  for (int i0 = 0; i0 < f.in; i0 += kMixedIn) {
    mixed_load(m, f, models, P, b, o0, i0, t, s_w, s_x);
    __syncthreads();
    mixed_accumulate(t, s_w, s_x, f.in - i0 < kMixedIn ? f.in - i0 : kMixedIn, acc);
    __syncthreads();
  }
  mixed_store(m, f, b, o0, t, acc);
}

class DeviceResidentStore final : public ResidentVectors {
public:
  DeviceResidentStore(int nodes, std::size_t num_params, cudaStream_t stream, TransferStats& bus)
      : nodes_(static_cast<std::size_t>(nodes)), P_(num_params), stream_(stream), bus_(bus),
        mixes_(nodes_), steps_(nodes_) {
    models_.resize(nodes_ * P_, "cudaMalloc (resident models)");
    grads_.resize(nodes_ * P_, "cudaMalloc (resident gradients)");
  }

  // Whether a plain mixing runs in a kernel of its own (plain_mix_tile; the default) or in
  // the kernel of every mixing (mix_tile): the same bits either way.
  void use_plain_mixing_kernel(bool on) { plain_mixing_kernel_ = on; }
  bool plain_mixing_kernel() const { return plain_mixing_kernel_; }
  // Whether the engine thread's element-wise steps (apply, decode, own_view) run as programs
  // of up to kProgramSteps steps, a kernel per program (the default), or a kernel per step:
  // the same bits either way.
  void use_vector_programs(bool on) { vector_programs_ = on; }
  bool vector_programs() const { return vector_programs_; }
  // The steps queued since the last program, launched now: before anything else uses the
  // stream (every use in here goes through stream(); the batch runner calls this first).
  void flush_program() {
    if (P_ == 0)
      program_.count = 0; // nothing to step: dropped, so that the queue never overflows
    if (program_.empty())
      return;
    const auto tiles = static_cast<unsigned>(program_blocks(P_)); // an encoding's pairs
    const VectorProgram program = program_;
    program_.count = 0; // dropped if the launch failed: the run stops at the throw below
    bus_.element_wise_steps += program.count;
    ++bus_.element_wise_kernels;
    if (program.count == 1)
      vector_step_kernel<<<tiles, kProgramThreads, 0, stream_>>>(program.steps[0], P_);
    else if (program.count <= kShortProgram)
      vector_program_kernel<<<tiles, kProgramThreads, 0, stream_>>>(
          first_steps<kShortProgram>(program), P_);
    else
      vector_program_kernel<<<tiles, kProgramThreads, 0, stream_>>>(program, P_);
    check(cudaGetLastError(), "kernel launch (resident vector steps)");
  }

  // --- ResidentVectors: plans queued by the hooks (each node's own entry: no race) ---
  void set_local_update(const LocalUpdateRule& rule) override {
    rule_ = rule;
    for (int k = 0; k < rule.rule_rows(); ++k) { // zero, before the first message
      DeviceArray<float>& rows = rule_rows_[k];
      rows.resize(nodes_ * P_, "cudaMalloc (resident rule rows)");
      check(cudaMemsetAsync(rows.data, 0, nodes_ * P_ * sizeof(float), stream()),
            "cudaMemsetAsync (resident rule rows)");
    }
    if (rule.flags_first_step())
      stepped_.assign(nodes_, 0);
    if (rule.choco)
      choco_ = std::make_unique<DeviceChocoSteps>(rule.compression, nodes_, P_, stream(), bus_);
  }
  bool take_encode_sums(EncodeSums& out) override {
    flush_program(); // the figures are read after the encodings before
    if (codec_) {    // SwarmSGD's encodings
      codec_->take_encode_sums(out);
      return true;
    }
    if (!choco_)
      return false;
    choco_->take_encode_sums(out);
    return true;
  }
  // --- a pairwise method's compressor steps (DeviceCodec), in call order on the stream ---
  void set_codec(const ResidentCodec& codec, ResidentCodecHost* /*host*/) override {
    codec_ = std::make_unique<DeviceCodec>(codec, nodes_, P_, stream(), bus_);
  }
  void encode(int node, VectorRef x, VectorRef wire) override {
    float* from = address(x);
    float* to = address(wire);
    DeviceCodec& c = codec();
    if (!c.encodes_in_programs()) {
      flush_program(); // the encoding's kernel (a whole-vector reduction) runs on its own
      c.encode(node, from, to);
      return;
    }
    if (c.figures_full()) { // the queued encodings write their slots before they are summed
      flush_program();
      c.flush_figures();
    }
    const DeviceCodec::EncodeSteps steps = c.encode_steps(node, from, to);
    for (int i = 0; i < steps.count; ++i)
      queue(steps.steps[i]);
  }
  void decode(int node, VectorRef wire, VectorRef ref, VectorRef out) override {
    queue(codec().decode_step(node, address(wire), address(ref), address(out)));
  }
  void own_view(int /*node*/, VectorRef wire, VectorRef /*x*/, VectorRef out) override {
    queue(codec().own_view_step(address(wire), address(out)));
  }
  bool take_decode_failures(std::span<std::int64_t> per_node) override {
    if (!codec_)
      return false;
    flush_program();
    codec_->take_decode_failures(per_node);
    return true;
  }
  // Whether the batch runner may fuse layers' weight gradients into the local steps: not
  // with a rule whose step reads rows of its own (LocalUpdateRule::step_reads_rows).
  bool can_fuse() const { return !rule_.step_reads_rows(); }
  void mix_into_model(int node, std::uint32_t self_id, float self_w,
                      std::span<const std::uint32_t> in_ids, std::span<const float> in_w,
                      float lr) override {
    Mix& m = mixes_[static_cast<std::size_t>(node)];
    m.queued = true;
    m.lr = lr;
    m.self = self_id;
    m.self_w = self_w;
    m.ids.assign(in_ids.begin(), in_ids.end());
    m.w.assign(in_w.begin(), in_w.end());
    m.refresh = false;
  }
  void refresh_after_mix(int node) override {
    Mix& m = mixes_[static_cast<std::size_t>(node)];
    if (!m.queued || !rule_.quasi_global || rule_.refresh_period <= 1)
      throw std::logic_error("refresh_after_mix: a queued mixing of a rule with a refresh period");
    m.refresh = true;
  }
  void local_step(int node, std::uint32_t out_id, float lr) override {
    if (out_id == kNoMessage && !rule_.combine_then_adapt)
      throw std::logic_error("resident local step: no message, but a rule that sends one");
    steps_[static_cast<std::size_t>(node)] = Step{true, out_id, lr};
  }
  void copy_model_to_message(int node, std::uint32_t id) override {
    float* to = message(id);
    check(cudaMemcpyAsync(to, models_.data + static_cast<std::size_t>(node) * P_,
                          P_ * sizeof(float), cudaMemcpyDeviceToDevice, stream()),
          "cudaMemcpyAsync (resident message)");
    check(cudaStreamSynchronize(stream()), "cudaStreamSynchronize");
  }
  // values up once, into the first node's row, then copied here into the others' rows.
  void write_rule_row(std::span<const int> nodes, int k, std::span<const float> values) override {
    if (k >= rule_.rule_rows() || values.size() != P_)
      throw std::invalid_argument("resident rule row: no such row, or not of the model's size");
    if (nodes.empty())
      return;
    float* rows = rule_rows_[k].data;
    check(cudaMemcpyAsync(rows + static_cast<std::size_t>(nodes[0]) * P_, values.data(),
                          P_ * sizeof(float), cudaMemcpyHostToDevice, stream()),
          "cudaMemcpyAsync (resident rule row)");
    bus_.host_to_device_bytes += static_cast<std::int64_t>(P_ * sizeof(float));
    DeviceArray<int> to;
    if (nodes.size() > 1) {
      to.resize(nodes.size(), "cudaMalloc (resident rule row nodes)");
      check(cudaMemcpyAsync(to.data, nodes.data(), nodes.size() * sizeof(int),
                            cudaMemcpyHostToDevice, stream()),
            "cudaMemcpyAsync (resident rule row nodes)");
      bus_.host_to_device_bytes += static_cast<std::int64_t>(nodes.size() * sizeof(int));
      queue_rule_row_copies(rows, to.data, nodes.size());
    }
    check(cudaStreamSynchronize(stream()), "cudaStreamSynchronize"); // values and `to` go now
  }
  // Rows node[1 ..count) of `rows` = row node[0], on the stream (public: a device lambda).
  void queue_rule_row_copies(float* rows, const int* node, std::size_t count) {
    const std::size_t P = P_;
    each_element(stream(), static_cast<int>(count) - 1, P, [=] __device__(int b, std::size_t e) {
      rows[static_cast<std::size_t>(node[b + 1]) * P + e] =
          rows[static_cast<std::size_t>(node[0]) * P + e];
    });
    check(cudaGetLastError(), "kernel launch (resident rule rows)");
  }
  void push_models(std::span<const float> models) override {
    if (models.size() != nodes_ * P_)
      throw std::invalid_argument("resident models: expected " + std::to_string(nodes_ * P_) +
                                  " floats");
    check(cudaMemcpyAsync(models_.data, models.data(), nodes_ * P_ * sizeof(float),
                          cudaMemcpyHostToDevice, stream()),
          "cudaMemcpyAsync (resident models)");
    start_momenta();
    check(cudaStreamSynchronize(stream()), "cudaStreamSynchronize"); // models is the caller's
    bus_.host_to_device_bytes += static_cast<std::int64_t>(nodes_ * P_ * sizeof(float));
  }
  // One model up the bus, copied to every row here.
  void push_initial_model(std::span<const float> model) override {
    if (model.size() != P_)
      throw std::invalid_argument("resident initial model: expected " + std::to_string(P_) +
                                  " floats");
    check(cudaMemcpyAsync(models_.data, model.data(), P_ * sizeof(float), cudaMemcpyHostToDevice,
                          stream()),
          "cudaMemcpyAsync (resident initial model)");
    queue_copy_of_first_row();
    start_momenta();
    check(cudaStreamSynchronize(stream()), "cudaStreamSynchronize"); // model is the caller's
    bus_.host_to_device_bytes += static_cast<std::int64_t>(P_ * sizeof(float));
  }
  // Rows 1 .. nodes_ - 1 of the models = row 0, on the stream (public only because nvcc
  // allows no device lambda in a private member).
  void queue_copy_of_first_row() {
    float* rows = models_.data;
    const std::size_t P = P_;
    each_element(stream(), static_cast<int>(nodes_) - 1, P, [=] __device__(int b, std::size_t e) {
      rows[(static_cast<std::size_t>(b) + 1) * P + e] = rows[e];
    });
    check(cudaGetLastError(), "kernel launch (resident initial models)");
  }
  // The momenta zero, where the rule keeps them: a run's start (public: as above).
  void start_momenta() {
    if (!rule_.keeps_momentum())
      return;
    momenta_.resize(nodes_ * P_, "cudaMalloc (resident momenta)");
    check(cudaMemsetAsync(momenta_.data, 0, nodes_ * P_ * sizeof(float), stream()),
          "cudaMemsetAsync (resident momenta)");
  }
  // The node models, nodes() rows of P floats (an evaluation pass reads them in place).
  const float* model_rows() const { return models_.data; }
  std::size_t nodes() const { return nodes_; }
  void mean_of_rows(VectorRef::Kind rows, std::span<float> out) override {
    const float* data = rows == VectorRef::Kind::model  ? models_.data
                        : rows == VectorRef::Kind::live ? live_.data
                                                        : nullptr;
    if (out.size() != P_ || data == nullptr)
      throw std::invalid_argument("resident mean: no such rows, or not of the model's size");
    queue_mean(data);
    check(cudaMemcpyAsync(out.data(), mean_.data, P_ * sizeof(float), cudaMemcpyDeviceToHost,
                          stream()),
          "cudaMemcpyAsync (resident mean)");
    check(cudaStreamSynchronize(stream()), "cudaStreamSynchronize");
    bus_.device_to_host_bytes += static_cast<std::int64_t>(P_ * sizeof(float));
  }
  double consensus_distance() override {
    queue_mean(models_.data);
    distances_.resize(nodes_, "cudaMalloc (resident consensus)");
    squared_distance_kernel<<<static_cast<unsigned>(nodes_), kDistanceThreads, 0, stream()>>>(
        models_.data, mean_.data, P_, distances_.data);
    check(cudaGetLastError(), "kernel launch (resident consensus)");
    distances_host_.resize(nodes_);
    check(cudaMemcpyAsync(distances_host_.data(), distances_.data, nodes_ * sizeof(double),
                          cudaMemcpyDeviceToHost, stream()),
          "cudaMemcpyAsync (resident consensus)");
    check(cudaStreamSynchronize(stream()), "cudaStreamSynchronize");
    bus_.device_to_host_bytes += static_cast<std::int64_t>(nodes_ * sizeof(double));
    double sum = 0;
    for (const double d : distances_host_)
      sum += d;
    return sum / static_cast<double>(nodes_);
  }
  // mean_ = the mean of `rows` (nodes_ rows of P floats), on the stream (public only because
  // nvcc allows no device lambda in a private member).
  void queue_mean(const float* rows) {
    mean_.resize(P_, "cudaMalloc (resident mean)");
    float* mean = mean_.data;
    const int nodes = static_cast<int>(nodes_);
    const std::size_t P = P_;
    each_element(stream(), 1, P, [=] __device__(int, std::size_t e) {
      mean[e] = mean_of_rows_element(rows, nodes, P, e);
    });
    check(cudaGetLastError(), "kernel launch (resident mean)");
  }
  void read(VectorRef ref, std::span<float> out) override {
    if (out.size() != P_)
      throw std::invalid_argument("resident read: not of the model's size");
    check(cudaMemcpyAsync(out.data(), address(ref), P_ * sizeof(float), cudaMemcpyDeviceToHost,
                          stream()),
          "cudaMemcpyAsync (resident read)");
    check(cudaStreamSynchronize(stream()), "cudaStreamSynchronize");
    bus_.device_to_host_bytes += static_cast<std::int64_t>(P_ * sizeof(float));
  }
  void pull_models(std::span<float> models) override {
    if (models.size() != nodes_ * P_)
      throw std::invalid_argument("resident models: expected " + std::to_string(nodes_ * P_) +
                                  " floats");
    check(cudaMemcpyAsync(models.data(), models_.data, nodes_ * P_ * sizeof(float),
                          cudaMemcpyDeviceToHost, stream()),
          "cudaMemcpyAsync (resident models)");
    check(cudaStreamSynchronize(stream()), "cudaStreamSynchronize");
    bus_.device_to_host_bytes += static_cast<std::int64_t>(nodes_ * P_ * sizeof(float));
  }

  // --- for the batch runner, on its stream ---
  // The mixings queued for the jobs' nodes, before their gradients. With first_layer > 0
  // (the batch runner's offer: an MLP whose first layer's W is that many floats at the start
  // of a row) and a plain mixing queued for every job, the first layer's elements are left
  // to the forward pass (run_mixed_forward, else settle_first_layer_mix); returns whether
  // they were.
  bool run_mixes(std::span<const GradientJob> jobs, std::size_t first_layer = 0) {
    if (pending_first_layer_.count > 0)
      throw std::logic_error("resident mixing: the last batch's first layer was never mixed");
    std::size_t count = 0, inputs = 0;
    for (const GradientJob& job : jobs)
      if (const Mix& m = mixes_[static_cast<std::size_t>(job.node)]; m.queued) {
        ++count;
        inputs += m.ids.size();
      }
    if (count == 0)
      return false;
    const bool refresh = rule_.quasi_global || rule_.decentlam; // the buffer after the mixing
    const bool subtract = rule_.combine_then_adapt || rule_.momentum_tracking; // lr u after it
    const bool with_lr = refresh || subtract;
    const bool accumulate = rule_.quasi_global && rule_.refresh_period > 1; // v, refreshed at L
    // The plan's arrays in one buffer, one copy up. Its pinned host buffer is rewritten here
    // with no event to wait for: the batch runner starts a batch only once the last one's
    // pass, after this copy on the stream, has ended (its losses collected or the stream
    // synchronized).
    PlanLayout layout;
    const std::size_t at_node = layout.add<int>(count);
    const std::size_t at_self = layout.add<const float*>(count);
    const std::size_t at_self_w = layout.add<float>(count);
    const std::size_t at_first = layout.add<int>(count + 1);
    const std::size_t at_in = layout.add<const float*>(inputs);
    const std::size_t at_in_w = layout.add<float>(inputs);
    const std::size_t at_lr = layout.add<float>(with_lr ? count : 0);
    const std::size_t at_refresh = layout.add<int>(accumulate ? count : 0);
    mix_plan_.reserve(layout);
    int* node = mix_plan_.on_host<int>(at_node);
    const float** self = mix_plan_.on_host<const float*>(at_self);
    float* self_w = mix_plan_.on_host<float>(at_self_w);
    int* first_input = mix_plan_.on_host<int>(at_first);
    const float** in = mix_plan_.on_host<const float*>(at_in);
    float* in_w = mix_plan_.on_host<float>(at_in_w);
    float* lr = mix_plan_.on_host<float>(at_lr);
    int* refresh_now = mix_plan_.on_host<int>(at_refresh);
    std::size_t b = 0, c = 0;
    for (const GradientJob& job : jobs) {
      Mix& m = mixes_[static_cast<std::size_t>(job.node)];
      if (!m.queued)
        continue;
      m.queued = false;
      node[b] = job.node;
      self[b] = m.self == kOwnModel ? models_.data + static_cast<std::size_t>(job.node) * P_
                                    : message(m.self);
      self_w[b] = m.self_w;
      if (with_lr)
        lr[b] = m.lr;
      if (accumulate)
        refresh_now[b] = m.refresh ? 1 : 0;
      first_input[b] = static_cast<int>(c);
      for (std::size_t k = 0; k < m.ids.size(); ++k, ++c) {
        in[c] = message(m.ids[k]);
        in_w[c] = m.w[k];
      }
      ++b;
    }
    first_input[b] = static_cast<int>(c);
    mix_plan_.upload(stream(), bus_);
    float* lr_up = mix_plan_.on_device<float>(at_lr);
    MixBatch batch{mix_plan_.on_device<int>(at_node),
                   mix_plan_.on_device<const float*>(at_self),
                   mix_plan_.on_device<float>(at_self_w),
                   mix_plan_.on_device<int>(at_first),
                   mix_plan_.on_device<const float*>(at_in),
                   mix_plan_.on_device<float>(at_in_w),
                   refresh ? lr_up : nullptr,
                   rule_.mu,
                   subtract ? lr_up : nullptr,
                   grads_.data};
    batch.decentlam = rule_.decentlam;
    if (accumulate) {
      batch.accumulate_rows = rule_rows_[0].data;
      batch.refresh_now = mix_plan_.on_device<int>(at_refresh);
      batch.refresh_scale = (1 - rule_.mu) / static_cast<float>(rule_.refresh_period);
    }
    batch.choco = rule_.choco;
    batch.choco_rows = choco_rows();
    float* models = models_.data;
    float* mhat = momenta_.data; // read and written only with a quasi-global or DecentLaM rule
    const std::size_t P = P_;
    const bool plain = !refresh && !subtract && !rule_.choco && !rule_.gradient_tracking;
    const std::size_t first = first_layer > 0 && first_layer < P && plain && count == jobs.size()
                                  ? first_layer
                                  : 0; // the elements mixed here: [first, P)
    if (plain && plain_mixing_kernel_)
      each_tile<kTile>(stream(), static_cast<int>(count), P - first,
                       [=] __device__(int b, std::size_t e0, std::size_t stride) {
                         plain_mix_tile<kTile>(batch, models, P, b, first + e0, stride);
                       });
    else
      each_tile<kTile>(stream(), static_cast<int>(count), P - first,
                       [=] __device__(int b, std::size_t e0, std::size_t stride) {
                         mix_tile<kTile>(batch, models, mhat, P, b, first + e0, stride);
                       });
    check(cudaGetLastError(), "kernel launch (resident mixing)");
    if (first > 0) {
      pending_first_layer_ = PendingFirstLayer{batch, count, first};
      return true;
    }
    if (rule_.gradient_tracking) { // y = mix(y) from the messages' second vectors
      MixBatch trackers = batch;
      trackers.subtract_lr = nullptr;
      trackers.u_rows = nullptr;
      trackers.self_is_destination = true;
      trackers.input_offset = P;
      float* y = rule_rows_[0].data;
      each_tile<kTile>(stream(), static_cast<int>(count), P,
                       [=] __device__(int b, std::size_t e0, std::size_t stride) {
                         mix_tile<kTile>(trackers, y, nullptr, P, b, e0, stride);
                       });
      check(cudaGetLastError(), "kernel launch (resident tracker mixing)");
    }
    if (rule_.momentum_tracking) { // d = mix(d - m) from the messages' second vectors, + m
      MixBatch corrections = batch;
      corrections.subtract_lr = nullptr;
      corrections.u_rows = nullptr;
      corrections.input_offset = P;
      corrections.add_rows = momenta_.data;
      float* d = rule_rows_[0].data;
      each_tile<kTile>(stream(), static_cast<int>(count), P,
                       [=] __device__(int b, std::size_t e0, std::size_t stride) {
                         mix_tile<kTile>(corrections, d, nullptr, P, b, e0, stride);
                       });
      check(cudaGetLastError(), "kernel launch (resident correction mixing)");
    }
    return false;
  }

  // The first layer's mixing that run_mixes left, fused with the forward product of the
  // chunk of every job (`f`: its minibatches and pre-activations, n <= kMixedExamples).
  void run_mixed_forward(const MixedForwardPlan& f) {
    if (pending_first_layer_.count == 0 || f.n > kMixedExamples || f.n < 1 ||
        static_cast<std::size_t>(f.out) * static_cast<std::size_t>(f.in) !=
            pending_first_layer_.first)
      throw std::logic_error("resident mixing: no first layer left for this forward pass");
    const PendingFirstLayer& pending = pending_first_layer_;
    for (std::size_t at = 0; at < pending.count; at += kMaxGridY) {
      const auto slice = static_cast<unsigned>(std::min(kMaxGridY, pending.count - at));
      mixed_forward_kernel<<<dim3(static_cast<unsigned>(mixed_slabs(f)), slice), kMixedThreads, 0,
                             stream()>>>(pending.batch, f, models_.data, P_, static_cast<int>(at));
    }
    check(cudaGetLastError(), "kernel launch (resident first-layer mixing and forward)");
    // Taken once launched: a launch that failed leaves it to settle_first_layer_mix.
    pending_first_layer_ = PendingFirstLayer{};
  }
  // The first layer's mixing that run_mixes left, on its own (a chunk the forward pass
  // cannot take it in); nothing when none is left.
  void settle_first_layer_mix() {
    const PendingFirstLayer pending = std::exchange(pending_first_layer_, PendingFirstLayer{});
    if (pending.count == 0)
      return;
    const MixBatch batch = pending.batch;
    float* models = models_.data;
    const std::size_t P = P_, end = pending.first;
    each_tile<kTile>(stream(), static_cast<int>(pending.count), end,
                     [=] __device__(int b, std::size_t e0, std::size_t stride) {
                       float v[kTile];
                       const std::size_t row = static_cast<std::size_t>(batch.node[b]) * P;
                       const auto at = [=](int j, std::size_t& e) {
                         e = e0 + static_cast<std::size_t>(j) * stride;
                         return e < end;
                       };
                       mix_sums<kTile>(batch, batch.self[b] + batch.input_offset, b, at, v);
                       for (int j = 0; j < kTile; ++j)
                         if (std::size_t e = 0; at(j, e))
                           models[row + e] = v[j];
                     });
    check(cudaGetLastError(), "kernel launch (resident first-layer mixing)");
  }
  bool first_layer_left() const { return pending_first_layer_.count > 0; }

  // Momentum tracking's start of a node (public only because nvcc allows no device lambda
  // in a private member): the first call takes the mean of every node's g0 (row d) into
  // gbar_, summed in node order; the steps are queued on the stream in event order.
  void start_momentum_tracking(int node, std::uint32_t out_id) override {
    if (!rule_.momentum_tracking)
      throw std::logic_error("start_momentum_tracking without its rule");
    const float* d_rows = rule_rows_[0].data;
    const int nodes = static_cast<int>(nodes_);
    const std::size_t P = P_;
    if (starts_ == 0) {
      gbar_.resize(P_, "cudaMalloc (momentum tracking's mean)");
      float* gbar = gbar_.data;
      each_element(stream(), 1, P, [=] __device__(int, std::size_t e) {
        gbar[e] = mean_of_rows_element(d_rows, nodes, P, e);
      });
      check(cudaGetLastError(), "kernel launch (momentum tracking's mean)");
    }
    const std::size_t row = static_cast<std::size_t>(node) * P_;
    const float* gbar = gbar_.data;
    const float* x = models_.data + row;
    float* d = rule_rows_[0].data + row;
    float* m = momenta_.data + row;
    float* u = grads_.data + row;
    float* d_minus_m = message(out_id) + P_;
    const float momentum = rule_.momentum, weight_decay = rule_.weight_decay;
    each_element(stream(), 1, P, [=] __device__(int, std::size_t e) {
      momentum_tracking_start_element(momentum, weight_decay, gbar[e], x[e], d + e, m + e,
                                      d_minus_m + e, u + e);
    });
    check(cudaGetLastError(), "kernel launch (momentum tracking's start)");
    if (++starts_ == nodes_)
      gbar_.release(); // cudaFree waits for the kernels that read it
  }

  // Where a chunk's pass reads its models and writes its gradients: the nodes' own rows when
  // jobs[ids[b]] for b < count are the consecutive nodes from jobs[ids[0]].node on
  // (`consecutive`, sort_by_node: a synchronous round's are; no copies), else the network's
  // strided rows (params + b * P), gathered first and scattered after.
  struct ChunkRows {
    const float* params = nullptr;
    float* grads = nullptr;
    bool in_place = false;
  };
  ChunkRows chunk_rows(std::span<const GradientJob> jobs, const std::size_t* ids, int count,
                       bool consecutive, float* params, float* grads) {
    if (!consecutive) {
      gather(jobs, ids, count, params);
      return {params, grads, false};
    }
    const std::size_t at = static_cast<std::size_t>(jobs[ids[0]].node) * P_;
    return {models_.data + at, grads_.data + at, true};
  }

  // A chunk's models into the network's strided parameter rows (params + b * P), before its
  // pass: jobs[ids[b]] for b < count.
  void gather(std::span<const GradientJob> jobs, const std::size_t* ids, int count, float* params) {
    chunk_node_.reserve(static_cast<std::size_t>(count));
    for (int b = 0; b < count; ++b)
      chunk_node_.host.data[b] = jobs[ids[b]].node;
    chunk_node_.upload(stream(), static_cast<std::size_t>(count), bus_);
    const int* node = chunk_node_.device.data;
    const float* models = models_.data;
    const std::size_t P = P_;
    each_element(stream(), count, P, [=] __device__(int b, std::size_t e) {
      params[static_cast<std::size_t>(b) * P + e] =
          models[static_cast<std::size_t>(node[b]) * P + e];
    });
  }
  // The chunk's gradients (grads + b * P) into the nodes' rows, after its pass.
  void scatter(int count, const float* grads) {
    const int* node = chunk_node_.device.data;
    float* rows = grads_.data;
    const std::size_t P = P_;
    each_element(stream(), count, P, [=] __device__(int b, std::size_t e) {
      rows[static_cast<std::size_t>(node[b]) * P + e] = grads[static_cast<std::size_t>(b) * P + e];
    });
  }

  // Whether every job's node has a local step queued (the batch runner's condition for
  // fusing layers' weight gradients into the steps).
  bool steps_queued_for(std::span<const GradientJob> jobs) const {
    return std::all_of(jobs.begin(), jobs.end(), [this](const GradientJob& job) {
      return steps_[static_cast<std::size_t>(job.node)].queued;
    });
  }
  // Called before anything reads a gradient row (a pairwise method's step, read()): the batch
  // runner computes the weight gradients it had left for fused steps.
  void on_gradient_read(std::function<void()> settle) { settle_gradients_ = std::move(settle); }

  // The local steps queued for the jobs' nodes, after the batch's after_gradient hooks. Left
  // running: the host reads nothing they write, everything that reads it on the device
  // (the next batch, a pull of the models) is queued behind it on the stream, and the next
  // batch synchronizes before these plans' pinned arrays are written again. The engine's
  // work until the next batch overlaps with the kernel. With `fused` (every job's step
  // queued, steps_queued_for), its layers' weights take their gradient from the pass's
  // buffers (fused_layer_step.hpp), not from the gradient rows, which keep there what was
  // in them before (combine-then-adapt's direction u is written as always).
  void run_steps(std::span<const GradientJob> jobs, const FusedLayers* fused = nullptr) {
    std::size_t count = 0;
    for (const GradientJob& job : jobs)
      count += steps_[static_cast<std::size_t>(job.node)].queued ? 1 : 0;
    if (fused && count != jobs.size()) // before any step's flag is cleared
      throw std::logic_error("resident local steps: a fused step needs every job's step");
    if (fused && rule_.step_reads_rows())
      throw std::logic_error("resident local steps: a step reading rows of its own is never fused");
    if (count == 0)
      return;
    // The last steps' plans may still be on their way up: the batch runner no longer waits
    // for the stream between two batches' steps (it waits for the pass's losses only).
    check(cudaEventSynchronize(steps_planned_.event), "cudaEventSynchronize (resident plans)");
    // The plan's arrays in one buffer, one copy up.
    const bool flags = rule_.flags_first_step(); // each entry's first-step flag
    PlanLayout layout;
    const std::size_t at_node = layout.add<int>(count);
    const std::size_t at_out = layout.add<float*>(count);
    const std::size_t at_lr = layout.add<float>(count);
    const std::size_t at_first = layout.add<int>(flags ? count : 0);
    step_plan_.reserve(layout);
    int* node = step_plan_.on_host<int>(at_node);
    float** out = step_plan_.on_host<float*>(at_out);
    float* lr = step_plan_.on_host<float>(at_lr);
    int* first_step = step_plan_.on_host<int>(at_first);
    std::size_t b = 0;
    for (const GradientJob& job : jobs) {
      Step& s = steps_[static_cast<std::size_t>(job.node)];
      if (!s.queued)
        continue;
      s.queued = false;
      node[b] = job.node;
      out[b] = s.out == kNoMessage ? nullptr : message(s.out);
      lr[b] = s.lr;
      ++b;
    }
    if (flags) // then its node has stepped
      for (std::size_t k = 0; k < count; ++k) {
        char& stepped = stepped_[static_cast<std::size_t>(node[k])];
        first_step[k] = stepped == 0 ? 1 : 0;
        stepped = 1;
      }
    step_plan_.upload(stream(), bus_);
    if (choco_) // each entry's step count, a plan too
      choco_->plan(node, count);
    check(cudaEventRecord(steps_planned_.event, stream()), "cudaEventRecord (resident plans)");
    const int* node_up = step_plan_.on_device<int>(at_node);
    const StepBatch batch{node_up,
                          step_plan_.on_device<float*>(at_out),
                          step_plan_.on_device<float>(at_lr),
                          rule_.momentum,
                          rule_.weight_decay,
                          rule_.nesterov,
                          rule_.quasi_global,
                          rule_.combine_then_adapt};
    float* grads = grads_.data; // combine-then-adapt keeps u there
    const float* models = models_.data;
    float* momenta = momenta_.data; // null without momentum: never read then
    const std::size_t P = P_;
    if (choco_) {
      choco_->run(batch, choco_rows(), node_up, count, grads, models, momenta);
      return;
    }
    if (rule_.flags_first_step()) { // never fused: its step reads its rows (above)
      const RuleRows rows{rule_rows_[0].data, rule_rows_[1].data,
                          step_plan_.on_device<int>(at_first)};
      if (rule_.d2)
        each_tile<kTile>(stream(), static_cast<int>(count), P,
                         [=] __device__(int b, std::size_t e0, std::size_t stride) {
                           d2_step_tile<kTile>(batch, rows, grads, models, P, b, e0, stride);
                         });
      else if (rule_.momentum_tracking)
        each_tile<kTile>(stream(), static_cast<int>(count), P,
                         [=] __device__(int b, std::size_t e0, std::size_t stride) {
                           momentum_tracking_step_tile<kTile>(batch, rows, grads, models, momenta,
                                                              P, b, e0, stride);
                         });
      else
        each_tile<kTile>(stream(), static_cast<int>(count), P,
                         [=] __device__(int b, std::size_t e0, std::size_t stride) {
                           tracking_step_tile<kTile>(batch, rows, grads, models, momenta, P, b, e0,
                                                     stride);
                         });
      check(cudaGetLastError(), "kernel launch (resident rule steps)");
      return;
    }
    const int layers = fused ? fused->count : 0;
    for (int l = 0; l < layers; ++l) {
      const FusedLayerPlan f = fused->plan[l];
      for (std::size_t at = 0; at < count; at += kMaxGridY) {
        const auto slice = static_cast<unsigned>(std::min(kMaxGridY, count - at));
        const dim3 grid(static_cast<unsigned>(fused_tiles(f)), slice);
        if (fused->prefetch && fused->sums_first && f.n <= kFusedExamples)
          fused_layer_step_prefetch_kernel<true><<<grid, kFusedThreads, 0, stream()>>>(
              batch, f, grads, models, momenta, P, static_cast<int>(at));
        else if (fused->prefetch)
          fused_layer_step_prefetch_kernel<false><<<grid, kFusedThreads, 0, stream()>>>(
              batch, f, grads, models, momenta, P, static_cast<int>(at));
        else
          fused_layer_step_kernel<<<grid, kFusedThreads, 0, stream()>>>(
              batch, f, grads, models, momenta, P, static_cast<int>(at));
      }
      check(cudaGetLastError(), "kernel launch (resident fused layer steps)");
      fused_rows_unwritten_ = fused_rows_unwritten_ || !rule_.combine_then_adapt;
    }
    // The rest of each row as plain step tiles (collected first: a device lambda cannot be
    // made inside another lambda).
    std::size_t ranges[kDeferrableLayers + 1][2]; // before, between and after the layers
    int count_ranges = 0;
    for_each_unfused_range(fused, P, [&](std::size_t from, std::size_t to) {
      ranges[count_ranges][0] = from;
      ranges[count_ranges][1] = to;
      ++count_ranges;
    });
    for (int k = 0; k < count_ranges; ++k) {
      const std::size_t from = ranges[k][0], to = ranges[k][1];
      each_tile<kTile>(stream(), static_cast<int>(count), to - from,
                       [=] __device__(int b, std::size_t e0, std::size_t stride) {
                         local_step_tile<kTile>(batch, grads, models, momenta, P, b, from + e0,
                                                stride, to);
                       });
    }
    check(cudaGetLastError(), "kernel launch (resident local steps)");
  }

private:
  static constexpr int kTile = 4; // elements per thread of the element kernels

  ChocoRows choco_rows() const {
    return {rule_rows_[0].data, rule_rows_[1].data, rule_rows_[2].data, rule_.gamma,
            rule_.choco_adapt_then_combine};
  }

  // One step of a pairwise method, on the stream: after the batches' kernels queued before
  // it, before those queued after (a step of the next program).
  void run_op(VectorOp op, VectorRef dst, VectorRef a, VectorRef b, Scalars k) override {
    if (op == VectorOp::accumulate || op == VectorOp::mean_of_sum) { // GSGM's double sum
      const bool accumulate = op == VectorOp::accumulate;
      if ((accumulate ? dst : a).kind != VectorRef::Kind::sum)
        throw std::logic_error("resident sum step without the server sum");
      queue(ProgramStep::sum_step(op, sum(), accumulate ? nullptr : address(dst),
                                  accumulate ? address(a) : nullptr, k.s));
      return;
    }
    // A server step without momentum never reads b: no momentum vector made for it.
    const bool uses_b = op != VectorOp::server_step || k.t > 0;
    queue(ProgramStep::vector_step(op, address(dst), address(a), uses_b ? address(b) : nullptr, k.s,
                                   k.t, k.u));
  }

  // A step at the end of the program (run with the next use of the stream); a full program,
  // or every step where programs are off, launched at once.
  void queue(const ProgramStep& step) {
    program_.push(step);
    if (program_.full() || !vector_programs_)
      flush_program();
  }

  // The stream, for any work but a program's: the steps queued before it run first.
  cudaStream_t stream() {
    flush_program();
    return stream_;
  }

  // The device row or buffer a step names (null for none); the live rows are made on first
  // use (engine thread).
  float* address(VectorRef ref) {
    const std::size_t row = static_cast<std::size_t>(ref.index) * P_;
    switch (ref.kind) {
    case VectorRef::Kind::model:
      return models_.data + row;
    case VectorRef::Kind::gradient:
      // On the engine thread (apply, read): the batch runner's deferred gradient is settled
      // only from here, never from the hooks, which run in parallel.
      if (settle_gradients_) { // the runner's kernels, after the steps queued before
        flush_program();
        settle_gradients_();
      }
      // A fused step with a rule that sends messages leaves the fused layers' gradient off
      // the row (combine-then-adapt writes its direction u there, as always); no such
      // method reads a gradient row, and were one to, it would read stale layers: refused
      // for the rest of the run (the flag is never cleared).
      if (fused_rows_unwritten_)
        throw std::logic_error("resident gradient read after a fused local step that kept "
                               "its layers' gradient off the row");
      return grads_.data + row;
    case VectorRef::Kind::live:
      live_.resize(nodes_ * P_, "cudaMalloc (resident live models)");
      return live_.data + row;
    case VectorRef::Kind::message:
      return message(ref.index);
    case VectorRef::Kind::server:
      return server(ref.index);
    case VectorRef::Kind::sum: // double: run_op reaches it through sum() alone
    case VectorRef::Kind::none:
      break;
    }
    return nullptr;
  }

  struct Mix {
    bool queued = false;
    std::uint32_t self = 0;
    float self_w = 1;
    std::vector<std::uint32_t> ids;
    std::vector<float> w;
    float lr = 0; // a quasi-global refresh's, or the lr u a combine-then-adapt mixing subtracts
    bool refresh = false; // refresh_after_mix
  };
  struct Step {
    bool queued = false;
    std::uint32_t out = 0;
    float lr = 0;
  };

  DeviceCodec& codec() {
    if (!codec_)
      throw std::logic_error("resident compressor step without set_codec");
    return *codec_;
  }

  // A parameter server's vector (0: model, 1: momentum, 2: scratch, 3: DC's mean square),
  // made zero on first use (engine thread).
  float* server(std::uint32_t index) {
    DeviceArray<float>& v = server_[index];
    if (v.data == nullptr) { // each on first use: no momentum, no momentum vector
      v.resize(P_, "cudaMalloc (resident server vectors)");
      check(cudaMemsetAsync(v.data, 0, P_ * sizeof(float), stream()),
            "cudaMemsetAsync (resident server vectors)");
    }
    return v.data;
  }

  // A parameter server's double sum, made zero on first use (engine thread).
  double* sum() {
    if (sum_.data == nullptr) {
      sum_.resize(P_, "cudaMalloc (resident server sum)");
      check(cudaMemsetAsync(sum_.data, 0, P_ * sizeof(double), stream()),
            "cudaMemsetAsync (resident server sum)");
    }
    return sum_.data;
  }

  // Message id's device buffer, made with its slab at the first use of one of the slab's ids
  // (on the engine thread: the runner's calls only); its address stays put when the store
  // grows. The slabs' layout is fixed at the first message, by the rule's vectors a message.
  float* message(std::uint32_t id) {
    const std::size_t floats = P_ * rule_.message_vectors();
    if (!message_slabs_)
      message_slabs_.emplace(floats);
    else if (message_slabs_->message_floats() != floats)
      throw std::logic_error("resident store: the messages' size changed after the first");
    const std::size_t slab = message_slabs_->slab_of(id);
    while (messages_.size() <= slab) {
      DeviceArray<float> buffer; // allocated before it joins: a failure leaves no null entry
      buffer.resize(message_slabs_->slab_floats(), "cudaMalloc (resident messages)");
      messages_.push_back(std::move(buffer));
    }
    return messages_[slab].data + message_slabs_->offset_of(id);
  }

  std::size_t nodes_, P_;
  cudaStream_t stream_;
  TransferStats& bus_;
  DeviceArray<float> models_, grads_, momenta_, live_, mean_;
  DeviceArray<double> distances_;      // consensus_distance's, one per node
  std::vector<double> distances_host_; // the same on the host
  DeviceArray<float> server_[4];       // a server's model, momentum, scratch, DC's mean square
  DeviceArray<double> sum_;            // and its double sum (GSGM)
  std::optional<MessageSlabs> message_slabs_; // where each message lives in messages_
  std::vector<DeviceArray<float>> messages_;  // the slabs, each made at its first id's use
  std::vector<Mix> mixes_;
  // The first layer's mixing that run_mixes left to the forward pass: the batch's plan (its
  // arrays stay on the device until the next run_mixes), its entries, W's floats.
  struct PendingFirstLayer {
    MixBatch batch;
    std::size_t count = 0;
    std::size_t first = 0;
  };
  PendingFirstLayer pending_first_layer_;
  std::vector<Step> steps_;
  LocalUpdateRule rule_;
  std::function<void()> settle_gradients_;
  bool plain_mixing_kernel_ = true;
  bool vector_programs_ = true;
  VectorProgram program_;             // the steps queued since the last launch (engine thread)
  bool fused_rows_unwritten_ = false; // a fused step kept its layers' gradient off the row
  StagedArrays mix_plan_;             // run_mixes' plan (its arrays stay up until the next one)
  StagedArrays step_plan_;            // run_steps'
  StagedPlan<int> chunk_node_;        // gather's
  DeviceArray<float> rule_rows_[3];   // a rule's own rows (RuleRows: GT's y, g_prev; D²'s;
                                      // CHOCO-SGD's x_half, xhat, s)
  std::vector<char> stepped_;         // with rule rows: the node has made its first step
  CudaEvent steps_planned_;           // after the last steps' plans were copied up
  std::unique_ptr<DeviceChocoSteps> choco_; // CHOCO-SGD's steps (a choco rule)
  std::unique_ptr<DeviceCodec> codec_;      // a pairwise method's compressor (set_codec)
  DeviceArray<float> gbar_; // momentum tracking's mean first gradient, until every start
  std::size_t starts_ = 0;  // momentum tracking's nodes started
};

} // namespace
} // namespace dtsim::cuda
