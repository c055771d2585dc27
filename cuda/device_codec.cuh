// SPDX-License-Identifier: MIT
// A resident SwarmSGD's compressor steps on the device (ResidentVectors::encode, decode,
// own_view for ResidentCodec: float32, float16 or the lattice quantizer), one kernel each on the
// batches' stream, in call order; the encodings' figures and the decoding failures stay on
// the device per node until the method takes them.
#pragma once

#include "cuda/device_memory.cuh"
#include "cuda/resident_math.hpp"
#include "sim/engine/resident_vectors.hpp"

#include <cstdint>
#include <span>
#include <vector>

namespace dtsim::cuda {
namespace {

// Blocks and threads of the encoding's kernel: a grid-wide stride over the vector, each
// block's sums of x^2 and (Q(x) - x)^2 a tree in a fixed order, the blocks' in block order.
constexpr int kCodecThreads = 256;
constexpr int kCodecBlocks = 132;

__global__ void codec_encode_kernel(const float* x, float* wire, std::size_t P, LatticeCodec c,
                                    ResidentCodec::Kind kind, std::uint64_t seed,
                                    std::uint64_t count, float* partials) {
  __shared__ float norms[kCodecThreads], errors[kCodecThreads];
  const int t = static_cast<int>(threadIdx.x);
  float norm = 0, error = 0;
  const std::size_t stride = static_cast<std::size_t>(gridDim.x) * kCodecThreads;
  for (std::size_t e = blockIdx.x * static_cast<std::size_t>(kCodecThreads) + t; e < P;
       e += stride) {
    const float v = x[e];
    norm += v * v;
    if (kind != ResidentCodec::Kind::lattice) { // the wire is the value (decoded)
      const float w = kind == ResidentCodec::Kind::half ? round_to_half(v) : v;
      wire[e] = w;
      error += (w - v) * (w - v);
      continue;
    }
    const float k = lattice_index(c, v, c.stochastic ? counter_uniform(seed, count, e) : 0.0f);
    wire[e] = k;
    const float d = k * c.side - v;
    error += d * d;
  }
  norms[t] = norm;
  errors[t] = error;
  __syncthreads();
  for (int width = kCodecThreads / 2; width > 0; width /= 2) {
    if (t < width) {
      norms[t] += norms[t + width];
      errors[t] += errors[t + width];
    }
    __syncthreads();
  }
  if (t == 0) {
    partials[2 * blockIdx.x] = errors[0];
    partials[2 * blockIdx.x + 1] = norms[0];
  }
}

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

// The encoding's figures from the blocks' sums, in block order. One thread.
__global__ void encode_figures_kernel(const float* partials, int blocks, double* sums) {
  double error_sq = 0, norm_sq = 0;
  for (int b = 0; b < blocks; ++b) {
    error_sq += static_cast<double>(partials[2 * b]);
    norm_sq += static_cast<double>(partials[2 * b + 1]);
  }
  add_encoding_figures(error_sq, norm_sq, sums);
}

// The nodes' running figures (4 per node on the device, as encode_figures_kernel leaves
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

class DeviceCodec {
public:
  DeviceCodec(const ResidentCodec& codec, std::size_t nodes, std::size_t P, cudaStream_t stream,
              TransferStats& bus)
      : codec_(codec), lattice_(codec.kind == ResidentCodec::Kind::lattice),
        c_(lattice_ ? lattice_codec(codec.bits, codec.side, codec.stochastic) : LatticeCodec{}),
        nodes_(nodes), P_(P), stream_(stream), bus_(bus), encodings_(nodes, 0) {
    sums_.resize(4 * nodes_, "cudaMalloc (resident encoding sums)");
    check(cudaMemsetAsync(sums_.data, 0, 4 * nodes_ * sizeof(double), stream_),
          "cudaMemsetAsync (resident encoding sums)");
    failures_.resize(nodes_, "cudaMalloc (resident decoding failures)");
    check(cudaMemsetAsync(failures_.data, 0, nodes_ * sizeof(unsigned long long), stream_),
          "cudaMemsetAsync (resident decoding failures)");
    partials_.resize(2 * kCodecBlocks, "cudaMalloc (resident encoding partials)");
  }

  // wire = C(x); its figures into the node's sums. The lattice's stochastic rounding draws
  // from the node's counter-based stream (seeds sent up at the first encoding).
  void encode(int node, const float* x, float* wire) {
    std::uint64_t seed = 0;
    if (lattice_ && codec_.stochastic) {
      if (seeds_host_.empty()) // read once: the method draws them before its first step
        seeds_host_.assign(codec_.seeds, codec_.seeds + nodes_);
      seed = seeds_host_[static_cast<std::size_t>(node)];
    }
    const std::uint64_t count = encodings_[static_cast<std::size_t>(node)]++;
    codec_encode_kernel<<<kCodecBlocks, kCodecThreads, 0, stream_>>>(x, wire, P_, c_, codec_.kind,
                                                                     seed, count, partials_.data);
    encode_figures_kernel<<<1, 1, 0, stream_>>>(partials_.data, kCodecBlocks,
                                                sums_.data + 4 * static_cast<std::size_t>(node));
    check(cudaGetLastError(), "kernel launch (resident encoding)");
  }
  // out = the wire decoded against ref (float32, float16: the wire itself); failures counted.
  void decode(int node, const float* wire, const float* ref, float* out) {
    const LatticeCodec c = c_;
    const bool lattice = lattice_;
    unsigned long long* failures = failures_.data + node;
    each_element(stream_, 1, P_, [=] __device__(int, std::size_t e) {
      if (!lattice) {
        out[e] = wire[e];
        return;
      }
      bool failed = false;
      out[e] = lattice_decode(c, wire[e], ref[e], &failed);
      if (failed) // an integer count: the same total in any order
        atomicAdd(failures, 1ull);
    });
    check(cudaGetLastError(), "kernel launch (resident decoding)");
  }
  // out = the sender's own reconstruction: the lattice value of each index (or the wire).
  void own_view(const float* wire, float* out) {
    const float side = lattice_ ? c_.side : 1.0f;
    each_element(stream_, 1, P_, [=] __device__(int, std::size_t e) { out[e] = wire[e] * side; });
    check(cudaGetLastError(), "kernel launch (resident own view)");
  }

  void take_encode_sums(ResidentVectors::EncodeSums& out) {
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

private:
  ResidentCodec codec_;
  bool lattice_;
  LatticeCodec c_;
  std::size_t nodes_, P_;
  cudaStream_t stream_;
  TransferStats& bus_;
  std::vector<std::uint64_t> seeds_host_;
  std::vector<std::uint64_t> encodings_; // per node: its stream's counter
  DeviceArray<double> sums_;
  DeviceArray<unsigned long long> failures_;
  DeviceArray<float> partials_;
};

} // namespace
} // namespace dtsim::cuda
