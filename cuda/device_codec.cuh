// SPDX-License-Identifier: MIT
// A resident SwarmSGD's compressor steps on the device (ResidentVectors::encode, decode,
// own_view for ResidentCodec: float32, float16, the lattice quantizer or another compressor's
// device form), on the batches' stream in call order: steps of the store's vector programs
// (vector_program.hpp), or for another compressor's device form a kernel of its own; the
// encodings' figures and the decoding failures stay on the device per node until the method
// takes them.
#pragma once

#include "cuda/device_compression.cuh"
#include "cuda/device_memory.cuh"
#include "cuda/resident_math.hpp"
#include "cuda/vector_program.hpp"
#include "sim/engine/batched_gradients.hpp"
#include "sim/engine/resident_vectors.hpp"

#include <algorithm>
#include <cstdint>
#include <span>
#include <stdexcept>
#include <vector>

namespace dtsim::cuda {
namespace {

// One encoding's figures (its EncodeStats: ||Q(x) - x||^2 and ||x||^2) added to its node's
// running sums (4 per node: error, count, relative error, its count), as
// GossipStats::encoded takes them.
__device__ inline void add_encoding_figures(double error_sq, double norm_sq, double* sums) {
  const double error = sqrt(error_sq);
  sums[0] += error;
  sums[1] += 1;
  if (norm_sq > 0) {
    sums[2] += error / sqrt(norm_sq);
    sums[3] += 1;
  }
}

// One encoding's figures from its buckets' (error^2, norm) pairs (or, with squared, (error^2,
// norm^2) pairs: groups of buckets, blocks), summed in double by the block (thread t takes
// pairs t, t + kFigureThreads, ... in order, then a tree in a fixed order: the same bits
// every time; one thread over 14,700 buckets of 16 floats would chain as many dependent
// additions): bucket_figures gives them to thread 0, add_bucket_figures adds them to its
// node's sums (`sums`, 4 floats: add_encoding_figures).
constexpr int kFigureThreads = 256;
__device__ inline void bucket_figures(const float* bucket_stats, unsigned buckets, bool squared,
                                      double& error_sq, double& norm_sq) {
  __shared__ double part[kFigureThreads];
  error_sq = 0;
  norm_sq = 0;
  for (unsigned k = threadIdx.x; k < buckets; k += kFigureThreads) {
    const float* stats = bucket_stats + 2 * static_cast<std::size_t>(k);
    error_sq += static_cast<double>(stats[0]);
    norm_sq += squared ? static_cast<double>(stats[1])
                       : static_cast<double>(stats[1]) * static_cast<double>(stats[1]);
  }
  error_sq = block_sum<kFigureThreads>(error_sq, part);
  norm_sq = block_sum<kFigureThreads>(norm_sq, part);
}
__device__ inline void add_bucket_figures(const float* bucket_stats, unsigned buckets, double* sums,
                                          bool squared) {
  double error_sq, norm_sq;
  bucket_figures(bucket_stats, buckets, squared, error_sq, norm_sq);
  if (threadIdx.x == 0)
    add_encoding_figures(error_sq, norm_sq, sums);
}

// The encodings whose (error^2, norm) pairs wait in a codec's partials, in encoding order:
// each one's node. A kernel's parameter (1 KB).
constexpr int kPendingFigures = 256;
struct PendingFigures {
  int count = 0;
  int node[kPendingFigures] = {};
};

// Block k: pending encoding k's figures from its `pairs` pairs at partials + 2 k pairs
// (bucket_figures, the tree a kernel per encoding ran before), into figures[2 k] and
// figures[2 k + 1].
__global__ void pending_figures_kernel(const float* partials, unsigned pairs, bool squared,
                                       double* figures) {
  double error_sq, norm_sq;
  bucket_figures(partials + 2 * static_cast<std::size_t>(blockIdx.x) * pairs, pairs, squared,
                 error_sq, norm_sq);
  if (threadIdx.x == 0) {
    figures[2 * blockIdx.x] = error_sq;
    figures[2 * blockIdx.x + 1] = norm_sq;
  }
}

// The pending encodings' figures added to their nodes' sums in encoding order, by one
// thread: each node's sums see its encodings in the order they ran, as before.
__global__ void add_pending_figures_kernel(const double* figures, PendingFigures pending,
                                           double* sums) {
  for (int k = 0; k < pending.count; ++k)
    add_encoding_figures(figures[2 * k], figures[2 * k + 1],
                         sums + 4 * static_cast<std::size_t>(pending.node[k]));
}

// The nodes' running figures (4 per node on the device, as add_pending_figures_kernel leaves
// them), added in node order (the same bits every run), and restarted at zero.
inline void take_node_figures(double* sums_device, std::size_t nodes, cudaStream_t stream,
                              TransferStats& bus, ResidentVectors::EncodeSums& out) {
  std::vector<double> sums(4 * nodes);
  check(cudaMemcpyAsync(sums.data(), sums_device, sums.size() * sizeof(double),
                        cudaMemcpyDeviceToHost, stream),
        "cudaMemcpyAsync (resident encoding sums)");
  check(cudaMemsetAsync(sums_device, 0, sums.size() * sizeof(double), stream),
        "cudaMemsetAsync (resident encoding sums)");
  check(cudaStreamSynchronize(stream), "cudaStreamSynchronize");
  bus.device_to_host_bytes += static_cast<std::int64_t>(sums.size() * sizeof(double));
  out = {};
  for (std::size_t i = 0; i < nodes; ++i) {
    out.error += sums[4 * i];
    out.count += static_cast<std::int64_t>(sums[4 * i + 1]);
    out.relative += sums[4 * i + 2];
    out.relative_count += static_cast<std::int64_t>(sums[4 * i + 3]);
  }
}

// A compressor's device form other than QSGD by buckets (compress_whole_block) over one
// vector x into wire, by one block; its figures added to the node's sums.
constexpr int kCodecWholeThreads = 512;
__global__ void __launch_bounds__(kCodecWholeThreads)
    codec_compress_kernel(const float* x, float* wire, std::size_t P, ResidentCompression form,
                          std::uint64_t seed, std::uint64_t count, double* sums) {
  __shared__ float part[kCodecWholeThreads];
  __shared__ CompressionShared<kCodecWholeThreads> shared;
  float squares = 0, magnitudes = 0;
  for (std::size_t e = threadIdx.x; e < P; e += kCodecWholeThreads) {
    squares += x[e] * x[e];
    magnitudes += fabsf(x[e]);
  }
  const float norm = sqrtf(block_sum<kCodecWholeThreads>(squares, part));
  const float l1 = block_sum<kCodecWholeThreads>(magnitudes, part);
  const float errors =
      block_sum<kCodecWholeThreads>(compress_whole_block<kCodecWholeThreads>(
                                        form, x, P, norm, l1, seed, count, wire, nullptr, shared),
                                    part);
  if (threadIdx.x == 0)
    add_encoding_figures(static_cast<double>(errors),
                         static_cast<double>(norm) * static_cast<double>(norm), sums);
}

// QSGD by buckets over one vector x into wire: block k quantizes bucket k with its norm (a
// tree over the block in a fixed order) and leaves its (error^2, norm) in partials, which
// flush_figures then sums.
constexpr int kCodecBucketThreads = 128;
__global__ void codec_qsgd_bucket_kernel(const float* x, float* wire, std::size_t P,
                                         ResidentCompression form, std::uint64_t seed,
                                         std::uint64_t count, float* partials) {
  __shared__ float part[kCodecBucketThreads];
  const std::size_t first = static_cast<std::size_t>(blockIdx.x) * form.bucket;
  const std::size_t end = first + form.bucket < P ? first + form.bucket : P;
  float squares = 0;
  for (std::size_t e = first + threadIdx.x; e < end; e += kCodecBucketThreads)
    squares += x[e] * x[e];
  const float norm = sqrtf(block_sum<kCodecBucketThreads>(squares, part));
  const QsgdBucket k = qsgd_bucket(norm, end - first, form.bits, form.contractive);
  float errors = qsgd_elements(
      k, x, first + threadIdx.x, end, kCodecBucketThreads,
      [=](std::size_t e) { return counter_uniform(seed, count, e); }, wire, nullptr);
  errors = block_sum<kCodecBucketThreads>(errors, part);
  if (threadIdx.x == 0) {
    partials[2 * blockIdx.x] = k.pass_through ? 0.0f : errors; // as Qsgd::encode counts it
    partials[2 * blockIdx.x + 1] = norm;
  }
}

// QSGD by buckets under kQsgdSmallBucket coordinates over one vector x into wire: a thread
// per bucket (qsgd_small_bucket); each block's sums of error^2 and norm^2 (trees in a fixed
// order) in partials, which flush_figures then sums.
constexpr int kSmallBucketThreads = 128;
__global__ void codec_qsgd_small_kernel(const float* x, float* wire, std::size_t P,
                                        ResidentCompression form, std::uint64_t seed,
                                        std::uint64_t count, float* partials) {
  __shared__ float part[kSmallBucketThreads];
  const std::size_t first =
      (static_cast<std::size_t>(blockIdx.x) * kSmallBucketThreads + threadIdx.x) * form.bucket;
  float error_sq = 0, norm_sq = 0;
  if (first < P) {
    const std::size_t len = form.bucket < P - first ? form.bucket : P - first;
    const float norm = sequential_norm(x + first, len);
    norm_sq = norm * norm;
    qsgd_small_bucket(
        x, first, len, norm, form.bits, form.contractive,
        [=](std::size_t e) { return counter_uniform(seed, count, e); }, wire, nullptr, error_sq);
  }
  error_sq = block_sum<kSmallBucketThreads>(error_sq, part);
  norm_sq = block_sum<kSmallBucketThreads>(norm_sq, part);
  if (threadIdx.x == 0) {
    partials[2 * blockIdx.x] = error_sq;
    partials[2 * blockIdx.x + 1] = norm_sq;
  }
}

class DeviceCodec {
public:
  DeviceCodec(const ResidentCodec& codec, std::size_t nodes, std::size_t P, cudaStream_t stream,
              TransferStats& bus)
      : codec_(codec), compress_(codec.kind == ResidentCodec::Kind::compress),
        lattice_(codec.kind == ResidentCodec::Kind::lattice),
        c_(lattice_ ? lattice_codec(codec.bits, codec.side, codec.stochastic) : LatticeCodec{}),
        nodes_(nodes), P_(P), stream_(stream), bus_(bus), encodings_(nodes, 0) {
    if (codec.error_feedback) { // the residuals start at zero
      errors_.resize(nodes_ * P_, "cudaMalloc (resident error-feedback residuals)");
      check(cudaMemsetAsync(errors_.data, 0, nodes_ * P_ * sizeof(float), stream_),
            "cudaMemsetAsync (resident error-feedback residuals)");
      input_.resize(P_, "cudaMalloc (resident error-feedback input)");
    }
    sums_.resize(4 * nodes_, "cudaMalloc (resident encoding sums)");
    check(cudaMemsetAsync(sums_.data, 0, 4 * nodes_ * sizeof(double), stream_),
          "cudaMemsetAsync (resident encoding sums)");
    failures_.resize(nodes_, "cudaMalloc (resident decoding failures)");
    check(cudaMemsetAsync(failures_.data, 0, nodes_ * sizeof(unsigned long long), stream_),
          "cudaMemsetAsync (resident decoding failures)");
    // Room for the pairs of up to kPendingFigures encodings, or as many as 16 MB hold.
    pairs_ = figure_pairs();
    slots_ = pairs_ == 0 ? 1
                         : std::clamp<std::size_t>(kPartialsFloats / (2 * pairs_), 1,
                                                   static_cast<std::size_t>(kPendingFigures));
    partials_.resize(std::max<std::size_t>(2 * pairs_ * slots_, 1),
                     "cudaMalloc (resident encoding partials)");
    figures_.resize(2 * slots_, "cudaMalloc (resident encoding figures)");
  }

  // Whether encodings are steps of the store's programs (encode_steps): every form without
  // a whole-vector sum (float32, float16, the lattice); another compressor's runs as a
  // kernel of its own (encode).
  bool encodes_in_programs() const { return !compress_; }
  // Whether the encodings' figure slots are all taken: the store then launches its program
  // (the encodings queued in it write their slots) and flush_figures empties them.
  bool figures_full() const { return pairs_ > 0 && pending_.count == static_cast<int>(slots_); }

  // The steps of wire = C(x) as the store queues them (encodes_in_programs; a slot free): the
  // encoding, its figures a pair per program block in the next slot, in ErrorFeedback's
  // order where it has one: v = x + e, wire = C(v), e = v - the sender's own view of the wire.
  struct EncodeSteps {
    int count = 0;
    ProgramStep steps[5];
  };
  EncodeSteps encode_steps(int node, const float* x, float* wire) {
    using Op = ResidentVectors::VectorOp;
    if (!encodes_in_programs() || figures_full())
      throw std::logic_error("resident encoding as a program step: not its form, or no slot");
    EncodeSteps out;
    const auto push = [&out](const ProgramStep& k) { out.steps[out.count++] = k; };
    float* e = codec_.error_feedback ? errors_.data + static_cast<std::size_t>(node) * P_ : nullptr;
    float* v = codec_.error_feedback ? input_.data : nullptr;
    if (e != nullptr) {
      push(ProgramStep::vector_step(Op::copy, v, x, nullptr, 0, 0, 0));
      push(ProgramStep::vector_step(Op::add, v, e, nullptr, 0, 0, 0));
      x = v;
    }
    const std::uint64_t seed = lattice_ && codec_.stochastic ? node_seed(node) : 0;
    const std::uint64_t count = encodings_[static_cast<std::size_t>(node)]++;
    float* partials = nullptr; // none for an empty vector: no block runs
    if (pairs_ > 0) {
      partials = partials_.data + 2 * pairs_ * static_cast<std::size_t>(pending_.count);
      pending_.node[pending_.count++] = node;
    }
    push(ProgramStep::encode_step(codec_.kind, c_, x, wire, seed, count, partials));
    if (e != nullptr) { // e = v - side wire (float32, float16: side 1)
      push(ProgramStep::vector_step(Op::copy, e, v, nullptr, 0, 0, 0));
      push(ProgramStep::vector_step(Op::subtract_scaled, e, wire, nullptr,
                                    lattice_ ? c_.side : 1.0f, 0, 0));
    }
    return out;
  }

  // wire = C(x) for another compressor's device form (not encodes_in_programs), a kernel of
  // its own; its figures into the node's sums.
  void encode(int node, const float* x, float* wire) {
    if (encodes_in_programs())
      throw std::logic_error("resident encoding: its form's are program steps (encode_steps)");
    if (!codec_.error_feedback) {
      encode_plain(node, x, wire);
      return;
    }
    // ErrorFeedback::encode: v = x + e, wire = C(v), e = v - the wire (a device form's wire
    // holds the decoded values).
    float* e = errors_.data + static_cast<std::size_t>(node) * P_;
    float* v = input_.data;
    each_element(stream_, 1, P_, [=] __device__(int, std::size_t k) { v[k] = x[k] + e[k]; });
    check(cudaGetLastError(), "kernel launch (resident error feedback)");
    encode_plain(node, v, wire);
    each_element(stream_, 1, P_, [=] __device__(int, std::size_t k) { e[k] = v[k] - wire[k]; });
    check(cudaGetLastError(), "kernel launch (resident error feedback)");
  }
  // wire = C(x) by a device form, without error feedback.
  void encode_plain(int node, const float* x, float* wire) {
    using Form = ResidentCompression::Kind;
    const Form form = codec_.compression.kind;
    const std::uint64_t seed = form == Form::qsgd || form == Form::random_k ? node_seed(node) : 0;
    const std::uint64_t count = encodings_[static_cast<std::size_t>(node)]++;
    // The kernel's (error^2, norm) pairs wait in the next slot of partials; their figures
    // join the node's sums when the slots are full or the sums are read (flush_figures; the
    // store has launched its program first).
    float* partials = nullptr;
    if (pairs_ > 0) {
      if (pending_.count == static_cast<int>(slots_))
        flush_figures();
      partials = partials_.data + 2 * pairs_ * static_cast<std::size_t>(pending_.count);
    }
    if (compress_ && buckets() > 0 && codec_.compression.bucket < kQsgdSmallBucket) {
      codec_qsgd_small_kernel<<<static_cast<unsigned>(pairs_), kSmallBucketThreads, 0, stream_>>>(
          x, wire, P_, codec_.compression, seed, count, partials);
    } else if (compress_ && buckets() > 0) {
      codec_qsgd_bucket_kernel<<<static_cast<unsigned>(pairs_), kCodecBucketThreads, 0, stream_>>>(
          x, wire, P_, codec_.compression, seed, count, partials);
    } else { // its figures added by the kernel itself
      codec_compress_kernel<<<1, kCodecWholeThreads, 0, stream_>>>(
          x, wire, P_, codec_.compression, seed, count,
          sums_.data + 4 * static_cast<std::size_t>(node));
    }
    check(cudaGetLastError(), "kernel launch (resident encoding)");
    if (pairs_ > 0) // pending once its pairs are on their way: a failed launch leaves none
      pending_.node[pending_.count++] = node;
  }
  // out = the wire decoded against ref (float32, float16: the wire itself); failures counted:
  // a step of the store's vector program.
  ProgramStep decode_step(int node, const float* wire, const float* ref, float* out) const {
    if (!lattice_)
      return ProgramStep::vector_step(ResidentVectors::VectorOp::copy, out, wire, nullptr, 0, 0, 0);
    return ProgramStep::decode_step(c_, wire, ref, out, failures_.data + node);
  }
  // out = the sender's own reconstruction: the lattice value of each index (or the wire).
  ProgramStep own_view_step(const float* wire, float* out) const {
    return ProgramStep::scale_step(wire, out, lattice_ ? c_.side : 1.0f);
  }

  void take_encode_sums(ResidentVectors::EncodeSums& out) {
    flush_figures();
    take_node_figures(sums_.data, nodes_, stream_, bus_, out);
  }
  void take_decode_failures(std::span<std::int64_t> per_node) {
    std::vector<unsigned long long> counts(nodes_);
    check(cudaMemcpyAsync(counts.data(), failures_.data, nodes_ * sizeof(unsigned long long),
                          cudaMemcpyDeviceToHost, stream_),
          "cudaMemcpyAsync (resident decoding failures)");
    check(cudaMemsetAsync(failures_.data, 0, nodes_ * sizeof(unsigned long long), stream_),
          "cudaMemsetAsync (resident decoding failures)");
    check(cudaStreamSynchronize(stream_), "cudaStreamSynchronize");
    bus_.device_to_host_bytes += static_cast<std::int64_t>(nodes_ * sizeof(unsigned long long));
    for (std::size_t i = 0; i < nodes_ && i < per_node.size(); ++i)
      per_node[i] += static_cast<std::int64_t>(counts[i]);
  }

  // The pending encodings' figures into their nodes' sums, in encoding order: two kernels
  // for up to kPendingFigures encodings, where each encoding had launched one. After the
  // encodings' own kernels: the store launches its program first.
  void flush_figures() {
    if (pending_.count == 0)
      return;
    const PendingFigures pending = pending_;
    pending_.count = 0;
    // QSGD by whole buckets has (error^2, norm) pairs; the others' are squares already.
    const bool squared =
        !(compress_ && buckets() > 0 && codec_.compression.bucket >= kQsgdSmallBucket);
    pending_figures_kernel<<<static_cast<unsigned>(pending.count), kFigureThreads, 0, stream_>>>(
        partials_.data, static_cast<unsigned>(pairs_), squared, figures_.data);
    add_pending_figures_kernel<<<1, 1, 0, stream_>>>(figures_.data, pending, sums_.data);
    check(cudaGetLastError(), "kernel launch (resident encoding figures)");
  }

private:
  static constexpr std::size_t kPartialsFloats = std::size_t{1} << 22;

  // The (error^2, norm) pairs an encoding leaves: per block of the program that encodes by
  // the lattice (or a cast), per block of small QSGD buckets, per QSGD bucket; none where the
  // kernel adds its figures itself (a whole-vector compression).
  std::size_t figure_pairs() const {
    if (compress_ && buckets() > 0 && codec_.compression.bucket < kQsgdSmallBucket)
      return (buckets() + kSmallBucketThreads - 1) / kSmallBucketThreads;
    if (compress_)
      return buckets();
    return program_blocks(P_);
  }
  // The node's seed (the method draws them before its first step; read once).
  std::uint64_t node_seed(int node) {
    if (seeds_host_.empty())
      seeds_host_.assign(codec_.seeds, codec_.seeds + nodes_);
    return seeds_host_[static_cast<std::size_t>(node)];
  }
  // QSGD by buckets: the buckets of a vector; else 0.
  std::size_t buckets() const {
    const ResidentCompression& f = codec_.compression;
    return compress_ && f.kind == ResidentCompression::Kind::qsgd && f.bucket > 0
               ? (P_ + f.bucket - 1) / f.bucket
               : 0;
  }

  ResidentCodec codec_;
  bool compress_ = false;
  bool lattice_;
  LatticeCodec c_;
  std::size_t nodes_, P_;
  cudaStream_t stream_;
  TransferStats& bus_;
  std::vector<std::uint64_t> seeds_host_;
  std::vector<std::uint64_t> encodings_; // per node: its stream's counter
  DeviceArray<float> errors_, input_;    // error feedback: each node's residual, v = x + e
  DeviceArray<double> sums_;
  DeviceArray<unsigned long long> failures_;
  DeviceArray<float> partials_; // slots_ encodings' pairs_ (error^2, norm) pairs
  DeviceArray<double> figures_; // each pending encoding's (error^2, norm^2)
  std::size_t pairs_ = 0, slots_ = 1;
  PendingFigures pending_; // the encodings whose pairs wait in partials_, in order
};

} // namespace
} // namespace dtsim::cuda
