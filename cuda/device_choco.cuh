// SPDX-License-Identifier: MIT
// A resident CHOCO-SGD's local steps on the device: the step before the compression, the
// compression of the difference by the device's form of the method's compressor
// (ResidentCompression), xhat += q and the message q, each entry's encoding figures kept per
// node until the method takes them. QSGD by buckets runs a block per bucket (under 16
// coordinates a thread per bucket); every other form a block per entry over the whole
// difference (device_compression.cuh).
#pragma once

#include "cuda/device_codec.cuh"
#include "cuda/device_compression.cuh"
#include "cuda/device_memory.cuh"
#include "cuda/resident_math.hpp"
#include "cuda/staged_plan.cuh"

#include <cstdint>
#include <stdexcept>
#include <vector>

namespace dtsim::cuda {
namespace {

// Element i of s where the step reads it (combine-then-adapt; adapt-then-combine reads s
// only in the mixing): 4 of the step's bytes per element saved.
__device__ inline float choco_sum(const ChocoRows& c, std::size_t i) {
  return c.adapt_then_combine ? 0.0f : c.s[i];
}

// Element e of a step entry's difference (choco_difference_element on the entry's rows r,
// its node's row at `row` of the choco rows): x_half and the momentum written.
__device__ inline float choco_difference_at(const StepBatch& s, const ChocoRows& c,
                                            const StepRows& r, std::size_t row, std::size_t e) {
  return choco_difference_element(s, c, r.lr, r.g[e], r.x[e], r.m ? r.m[e] : 0.0f, c.xhat[row + e],
                                  choco_sum(c, row + e), r.m ? r.m + e : nullptr,
                                  c.x_half + row + e);
}

struct ChocoPlan {
  ResidentCompression form;
  const std::uint64_t* seeds = nullptr; // per node
  const std::uint64_t* steps = nullptr; // per step entry: the node's step count
};

// QSGD by buckets: block (k, y) steps bucket k of step entry first_entry + y. Its threads
// stride the bucket twice: first the step before the compression (choco_difference_element:
// x_half written, the difference d kept in the gradient's row), then, with the bucket's
// norm, QSGD (qsgd_element) into the message, xhat += q. The bucket's sums of d^2 and
// (q - d)^2 are trees over the block in a fixed order, so the same rows give the same bits;
// each block leaves its bucket's (error^2, norm) in bucket_stats.
constexpr int kChocoBucketThreads = 128;
__global__ void choco_bucket_kernel(StepBatch s, ChocoRows c, ChocoPlan q, float* grads,
                                    const float* models, float* momenta, std::size_t P,
                                    float* bucket_stats, int first_entry) {
  __shared__ float part[kChocoBucketThreads];
  const int b = first_entry + static_cast<int>(blockIdx.y);
  const StepRows r = step_rows(s, grads, models, momenta, P, b);
  const std::size_t row = static_cast<std::size_t>(s.node[b]) * P;
  const std::size_t first = static_cast<std::size_t>(blockIdx.x) * q.form.bucket;
  const std::size_t end = first + q.form.bucket < P ? first + q.form.bucket : P;
  float squares = 0;
  for (std::size_t e = first + threadIdx.x; e < end; e += kChocoBucketThreads) {
    const float d = choco_difference_at(s, c, r, row, e);
    r.g[e] = d; // the thread's own elements: read back by it alone, below
    squares += d * d;
  }
  const float norm = sqrtf(block_sum<kChocoBucketThreads>(squares, part));
  const QsgdBucket k = qsgd_bucket(norm, end - first, q.form.bits, q.form.contractive);
  const std::uint64_t seed = q.seeds[s.node[b]];
  const std::uint64_t step = q.steps[b];
  float errors = qsgd_elements(
      k, r.g, first + threadIdx.x, end, kChocoBucketThreads,
      [=](std::size_t e) { return counter_uniform(seed, step, e); }, r.out, c.xhat + row);
  errors = block_sum<kChocoBucketThreads>(errors, part);
  if (threadIdx.x == 0) {
    float* stats = bucket_stats + 2 * (static_cast<std::size_t>(b) * gridDim.x + blockIdx.x);
    stats[0] = k.pass_through ? 0.0f : errors; // Qsgd::encode counts no error there
    stats[1] = norm;
  }
}

// QSGD by buckets under kQsgdSmallBucket coordinates: block (k, y) steps buckets
// [128 k, 128 k + 128) of step entry first_entry + y, a thread per bucket: the step before the
// compression (choco_difference_element) over its bucket, then qsgd_small_bucket into the
// message, xhat += q. Each block leaves its sums of error^2 and norm^2 (trees in a fixed
// order) in block_stats.
__global__ void choco_small_bucket_kernel(StepBatch s, ChocoRows c, ChocoPlan q, float* grads,
                                          const float* models, float* momenta, std::size_t P,
                                          float* block_stats, int first_entry) {
  __shared__ float part[kSmallBucketThreads];
  const int b = first_entry + static_cast<int>(blockIdx.y);
  const StepRows r = step_rows(s, grads, models, momenta, P, b);
  const std::size_t row = static_cast<std::size_t>(s.node[b]) * P;
  const std::size_t first =
      (static_cast<std::size_t>(blockIdx.x) * kSmallBucketThreads + threadIdx.x) * q.form.bucket;
  float error_sq = 0, norm_sq = 0;
  if (first < P) {
    const std::size_t len = q.form.bucket < P - first ? q.form.bucket : P - first;
    for (std::size_t e = first; e < first + len; ++e)
      r.g[e] = choco_difference_at(s, c, r, row, e);
    const float norm = sequential_norm(r.g + first, len);
    norm_sq = norm * norm;
    const std::uint64_t seed = q.seeds[s.node[b]], step = q.steps[b];
    qsgd_small_bucket(
        r.g, first, len, norm, q.form.bits, q.form.contractive,
        [=](std::size_t e) { return counter_uniform(seed, step, e); }, r.out, c.xhat + row,
        error_sq);
  }
  error_sq = block_sum<kSmallBucketThreads>(error_sq, part);
  norm_sq = block_sum<kSmallBucketThreads>(norm_sq, part);
  if (threadIdx.x == 0) {
    float* stats = block_stats + 2 * (static_cast<std::size_t>(b) * gridDim.x + blockIdx.x);
    stats[0] = error_sq;
    stats[1] = norm_sq;
  }
}

// Every other form: block y steps entry first_entry + y over its whole difference. First
// the step before the compression (as choco_bucket_kernel's first stride) with the sums of
// d^2 and |d| (trees over the block); then compress_whole_block into the message, xhat += q.
// The entry's (error^2, norm) go to entry_stats.
constexpr int kChocoWholeThreads = 512;
__global__ void __launch_bounds__(kChocoWholeThreads)
    choco_whole_kernel(StepBatch s, ChocoRows c, ChocoPlan q, float* grads, const float* models,
                       float* momenta, std::size_t P, float* entry_stats, int first_entry) {
  __shared__ float part[kChocoWholeThreads];
  __shared__ CompressionShared<kChocoWholeThreads> shared;
  const int t = static_cast<int>(threadIdx.x);
  const int b = first_entry + static_cast<int>(blockIdx.x);
  const StepRows r = step_rows(s, grads, models, momenta, P, b);
  const std::size_t row = static_cast<std::size_t>(s.node[b]) * P;
  float squares = 0, magnitudes = 0;
  for (std::size_t e = static_cast<std::size_t>(t); e < P; e += kChocoWholeThreads) {
    const float d = choco_difference_at(s, c, r, row, e);
    r.g[e] = d; // every thread reads it after the sums' barriers
    squares += d * d;
    magnitudes += fabsf(d);
  }
  const float norm = sqrtf(block_sum<kChocoWholeThreads>(squares, part));
  const float l1 = block_sum<kChocoWholeThreads>(magnitudes, part);
  const float errors = block_sum<kChocoWholeThreads>(
      compress_whole_block<kChocoWholeThreads>(q.form, r.g, P, norm, l1, q.seeds[s.node[b]],
                                               q.steps[b], r.out, c.xhat + row, shared),
      part);
  if (t == 0) {
    float* stats = entry_stats + 2 * static_cast<std::size_t>(b);
    stats[0] = errors;
    stats[1] = norm;
  }
}

// Each step entry's encoding figures (GossipStats::encoded's per message: ||q - d|| and, for
// d != 0, ||q - d|| / ||d||, from its buckets' (error^2, norm) summed in double, as an
// encoder's EncodeStats, or with `squared` its blocks' (error^2, norm^2) of small buckets),
// added to its node's running sums (4 per node: error, count, relative error, its count).
// A block of kFigureThreads per entry (add_bucket_figures); a node is in one entry.
__global__ void choco_stats_kernel(const int* node, const float* bucket_stats, unsigned buckets,
                                   double* node_sums, bool squared) {
  const auto b = static_cast<std::size_t>(blockIdx.x);
  add_bucket_figures(bucket_stats + 2 * b * buckets, buckets,
                     node_sums + 4 * static_cast<std::size_t>(node[b]), squared);
}

// The steps of a resident CHOCO-SGD: each node's step count (its device stream's counter),
// the seeds, the figures; run() queues a batch's steps on the stream.
class DeviceChocoSteps {
public:
  DeviceChocoSteps(const ResidentCompression& form, std::size_t nodes, std::size_t P,
                   cudaStream_t stream, TransferStats& bus)
      : form_(form), nodes_(nodes), P_(P), stream_(stream), bus_(bus), steps_(nodes, 0) {
    if (form.kind == ResidentCompression::Kind::none || form.seeds == nullptr)
      throw std::logic_error("resident CHOCO-SGD: a compressor without a device form");
    sums_.resize(4 * nodes_, "cudaMalloc (resident encoding sums)");
    check(cudaMemsetAsync(sums_.data, 0, 4 * nodes_ * sizeof(double), stream_),
          "cudaMemsetAsync (resident encoding sums)");
    seeds_.resize(nodes_, "cudaMalloc (resident compression seeds)");
  }

  // The step counts of the `count` entries of `node` (uploaded with the plans); the seeds go
  // up once, at the first steps, when the method has drawn them.
  void plan(const int* node, std::size_t count) {
    if (!seeded_) {
      check(cudaMemcpyAsync(seeds_.data, form_.seeds, nodes_ * sizeof(std::uint64_t),
                            cudaMemcpyHostToDevice, stream_),
            "cudaMemcpyAsync (resident compression seeds)");
      check(cudaStreamSynchronize(stream_), "cudaStreamSynchronize");
      bus_.host_to_device_bytes += static_cast<std::int64_t>(nodes_ * sizeof(std::uint64_t));
      seeded_ = true;
    }
    step_counts_.reserve(count);
    for (std::size_t k = 0; k < count; ++k)
      step_counts_.host.data[k] = steps_[static_cast<std::size_t>(node[k])]++;
    step_counts_.upload(stream_, count, bus_);
  }

  // The steps of the `count` entries planned last (node: their nodes on the device), then
  // their encoding figures.
  void run(const StepBatch& batch, const ChocoRows& rows, const int* node, std::size_t count,
           float* grads, const float* models, float* momenta) {
    const ChocoPlan plan{form_, seeds_.data, step_counts_.device.data};
    const bool buckets = form_.kind == ResidentCompression::Kind::qsgd && form_.bucket > 0;
    const bool small = buckets && form_.bucket < kQsgdSmallBucket; // a thread per bucket
    const auto bucket_count =
        buckets ? static_cast<unsigned>((P_ + form_.bucket - 1) / form_.bucket) : 1u;
    const auto per_entry = // figures per entry: per block of small buckets, else per bucket
        small ? (bucket_count + kSmallBucketThreads - 1) / kSmallBucketThreads : bucket_count;
    stats_.resize(2 * count * per_entry, "cudaMalloc (resident compression figures)");
    if (small) {
      for (std::size_t at = 0; at < count; at += kMaxGridY) {
        const auto slice = static_cast<unsigned>(std::min(kMaxGridY, count - at));
        choco_small_bucket_kernel<<<dim3(per_entry, slice), kSmallBucketThreads, 0, stream_>>>(
            batch, rows, plan, grads, models, momenta, P_, stats_.data, static_cast<int>(at));
      }
    } else if (buckets) {
      for (std::size_t at = 0; at < count; at += kMaxGridY) {
        const auto slice = static_cast<unsigned>(std::min(kMaxGridY, count - at));
        choco_bucket_kernel<<<dim3(per_entry, slice), kChocoBucketThreads, 0, stream_>>>(
            batch, rows, plan, grads, models, momenta, P_, stats_.data, static_cast<int>(at));
      }
    } else {
      choco_whole_kernel<<<static_cast<unsigned>(count), kChocoWholeThreads, 0, stream_>>>(
          batch, rows, plan, grads, models, momenta, P_, stats_.data, 0);
    }
    check(cudaGetLastError(), "kernel launch (resident CHOCO-SGD steps)");
    choco_stats_kernel<<<static_cast<unsigned>(count), kFigureThreads, 0, stream_>>>(
        node, stats_.data, per_entry, sums_.data, small);
    check(cudaGetLastError(), "kernel launch (resident CHOCO-SGD figures)");
  }

  // The nodes' encoding figures since the last call, in node order.
  void take_encode_sums(ResidentVectors::EncodeSums& out) {
    take_node_figures(sums_.data, nodes_, stream_, bus_, out);
  }

private:
  ResidentCompression form_;
  std::size_t nodes_, P_;
  cudaStream_t stream_;
  TransferStats& bus_;
  std::vector<std::uint64_t> steps_; // each node's steps so far
  bool seeded_ = false;
  DeviceArray<std::uint64_t> seeds_;
  StagedPlan<std::uint64_t> step_counts_;
  // 2 per bucket (or entry) of the batch, error^2 and norm; small buckets: 2 per block of
  // them, error^2 and norm^2 (float sums over 128 buckets: on a diverging run they reach
  // inf before the host's double sums do).
  DeviceArray<float> stats_;
  DeviceArray<double> sums_; // 4 per node
};

} // namespace
} // namespace dtsim::cuda
