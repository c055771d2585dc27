// SPDX-License-Identifier: MIT
// A plain gossip mixing of an MLP's first-layer weights fused with that layer's forward
// product: a block mixes a slab of 64 outputs of a node's W (out x in, column-major, at the
// start of its row) from the node's messages, 32 inputs at a time, writes the mixed weights
// to the node's model and keeps them in shared memory, where it multiplies them with the
// node's minibatch, read by index from the training set. Unfused, the mixing writes W and
// cuBLAS's forward GEMM reads it back from memory (the first layer is 85% of the
// 784-256-128-10 MLP's row), after the minibatch was gathered into a buffer of its own: per
// node-step about one vector of 0.94 MB less to move. The mixed weights are mix_sums's, the
// same bits as the unfused mixing; the products are summed in input order (cuBLAS's order
// differs: the pre-activations agree to rounding). Per thread as functions here, so that the
// host tests run the kernel's blocks thread by thread.
#pragma once

#include "cuda/resident_math.hpp"

#include <cstddef>
#include <cstdint>

namespace dtsim::cuda {

constexpr int kMixedOut = 64;      // outputs per block
constexpr int kMixedIn = 32;       // inputs per load into shared memory
constexpr int kMixedThreads = 256; // thread t: outputs 4 (t % 16) .. +3, examples 2 (t / 16), +1
constexpr int kMixedExamples = 32; // the largest minibatch the kernel takes
constexpr int kMixedOutPerThread = 4;
constexpr int kMixedExamplesPerThread = 2;
constexpr int kMixedWeightsPerThread = kMixedOut * kMixedIn / kMixedThreads;     // 8
constexpr int kMixedInputsPerThread = kMixedExamples * kMixedIn / kMixedThreads; // 4
static_assert(16 * kMixedOutPerThread == kMixedOut &&
                  kMixedThreads / 16 * kMixedExamplesPerThread == kMixedExamples,
              "the threads' outputs and examples cover the slab and the minibatch");
// Shared memory: the slab's weights, [input][output]; the examples, [input][example] with a
// row of 34, so that a thread reads its two examples of an input as one 8-byte load (with 8
// multiply-adds per 16-byte weight load: two loads, not three); a warp's stores (32 inputs
// of one example) then meet in pairs on 16 banks, at an eighth of the reads' count.
constexpr int kMixedWeightFloats = kMixedIn * kMixedOut;
constexpr int kMixedInputRow = kMixedExamples + 2;
constexpr int kMixedExampleFloats = kMixedIn * kMixedInputRow;

// The forward product's inputs and output for a chunk of nodes on their own rows: the node at
// chunk position p (node first_node + p) has its n <= kMixedExamples minibatch indices at
// idx + p * n (columns of `train`, features x examples, column-major) and its pre-activations
// go to z + p * out * n (out x n, column-major), before the bias.
struct MixedForwardPlan {
  const float* train = nullptr;
  const std::uint32_t* idx = nullptr;
  float* z = nullptr;
  int out = 0;
  int in = 0;
  int n = 0;
  int first_node = 0;
};

// Blocks per mixing entry: the slabs over a first layer's `out` outputs.
DTSIM_HD inline int mixed_slabs(int out) {
  return (out + kMixedOut - 1) / kMixedOut;
}
DTSIM_HD inline int mixed_slabs(const MixedForwardPlan& f) {
  return mixed_slabs(f.out);
}

// Whether a batch of `entries` mixings gives the mixed pass at least `min_blocks_per_sm`
// blocks per SM (KernelChoices::mixing_min_blocks_per_sm, two by default).
// Each block walks W's inputs 32 at a time, waiting on every load (25 steps for
// Fashion-MNIST's 784), where the plain mixing spreads a node's row over about 200 blocks:
// a batch of a few nodes (an asynchronous run's) would leave most SMs idle in it, so such a
// batch mixes apart, as without the fusion. (Which path a batch takes then depends on the
// GPU, as its chunks already do; on one GPU the bits repeat.)
inline bool mixed_forward_fills(std::size_t entries, int out, int sm_count, int min_blocks_per_sm) {
  return entries * static_cast<std::size_t>(mixed_slabs(out)) >=
         static_cast<std::size_t>(min_blocks_per_sm) * static_cast<std::size_t>(sm_count);
}

// The accumulators of one thread: its outputs' pre-activations for its examples.
struct MixedAccumulators {
  float z[kMixedOutPerThread][kMixedExamplesPerThread];
};

// Thread t's share of the load of inputs [i0, i0 + kMixedIn) for mixing entry b's slab of
// outputs from o0: weight (o0 + t % 64, i0 + t / 64 + 4 j) for j < 8, mixed (mix_sums),
// written to the node's model row and to s_w[i][o], zero past the layer's edges (never
// written there: those elements belong to the rest of the row, which the plain mixing
// does); then example k's input i0 + i as s_x[i * kMixedInputRow + k] for t + 256 j =
// 32 k + i, zero past the minibatch or the layer.
DTSIM_HD inline void mixed_load(const MixBatch& m, const MixedForwardPlan& f, float* models,
                                std::size_t P, int b, int o0, int i0, int t, float* s_w,
                                float* s_x) {
  const std::size_t row = static_cast<std::size_t>(m.node[b]) * P;
  const int o = o0 + t % kMixedOut, first_i = i0 + t / kMixedOut;
  constexpr int kInputStep = kMixedThreads / kMixedOut; // 4
  float v[kMixedWeightsPerThread];
  const auto at = [=](int j, std::size_t& e) {
    const int i = first_i + kInputStep * j;
    e = static_cast<std::size_t>(i) * static_cast<std::size_t>(f.out) + static_cast<std::size_t>(o);
    return o < f.out && i < f.in;
  };
  mix_sums<kMixedWeightsPerThread>(m, m.self[b] + m.input_offset, b, at, v);
  float* x = models + row;
  DTSIM_UNROLL
  for (int j = 0; j < kMixedWeightsPerThread; ++j) {
    std::size_t e = 0;
    const bool valid = at(j, e);
    if (valid)
      x[e] = v[j];
    s_w[(t / kMixedOut + kInputStep * j) * kMixedOut + t % kMixedOut] = valid ? v[j] : 0.0f;
  }
  const int p = m.node[b] - f.first_node;
  const std::uint32_t* idx = f.idx + static_cast<std::size_t>(p) * static_cast<std::size_t>(f.n);
  DTSIM_UNROLL
  for (int j = 0; j < kMixedInputsPerThread; ++j) {
    const int slot = t + kMixedThreads * j;
    const int k = slot / kMixedIn, i = slot % kMixedIn;
    s_x[i * kMixedInputRow + k] =
        k < f.n && i0 + i < f.in
            ? f.train[static_cast<std::size_t>(idx[k]) * static_cast<std::size_t>(f.in) +
                      static_cast<std::size_t>(i0 + i)]
            : 0.0f;
  }
}

// Thread t adds the loaded inputs' products to its accumulators, in input order (`inputs`:
// the loaded inputs that are in the layer). s_w must be 16-byte aligned, s_x 8-byte.
DTSIM_HD inline void mixed_accumulate(int t, const float* s_w, const float* s_x, int inputs,
                                      MixedAccumulators& a) {
  const int first_o = t % 16 * kMixedOutPerThread, first_k = t / 16 * kMixedExamplesPerThread;
  for (int i = 0; i < inputs; ++i) {
    const float* row = s_w + i * kMixedOut + first_o;
#if defined(__CUDA_ARCH__) // one 16-byte load from shared memory (s_w is 16-byte aligned)
    const float4 w4 = *reinterpret_cast<const float4*>(row);
    const float w[kMixedOutPerThread] = {w4.x, w4.y, w4.z, w4.w};
#else
    const float* w = row;
#endif
    static_assert(kMixedExamplesPerThread == 2 && kMixedInputRow % 2 == 0,
                  "a thread's examples of an input are one aligned float2");
#if defined(__CUDA_ARCH__) // one 8-byte load (i * 34 + first_k is even)
    const float2 x2 = *reinterpret_cast<const float2*>(s_x + i * kMixedInputRow + first_k);
    const float x[kMixedExamplesPerThread] = {x2.x, x2.y};
#else
    const float* x = s_x + i * kMixedInputRow + first_k;
#endif
    DTSIM_UNROLL
    for (int q = 0; q < kMixedOutPerThread; ++q) {
      DTSIM_UNROLL
      for (int r = 0; r < kMixedExamplesPerThread; ++r)
        a.z[q][r] += w[q] * x[r];
    }
  }
}

// Thread t's pre-activations of mixing entry b's slab into the plan's z.
DTSIM_HD inline void mixed_store(const MixBatch& m, const MixedForwardPlan& f, int b, int o0, int t,
                                 const MixedAccumulators& a) {
  const int p = m.node[b] - f.first_node;
  float* z = f.z + static_cast<std::size_t>(p) * static_cast<std::size_t>(f.out) *
                       static_cast<std::size_t>(f.n);
  const int first_o = o0 + t % 16 * kMixedOutPerThread, first_k = t / 16 * kMixedExamplesPerThread;
  DTSIM_UNROLL
  for (int r = 0; r < kMixedExamplesPerThread; ++r) {
    const int k = first_k + r;
    DTSIM_UNROLL
    for (int q = 0; q < kMixedOutPerThread; ++q) {
      const int o = first_o + q;
      if (k < f.n && o < f.out)
        z[static_cast<std::size_t>(k) * static_cast<std::size_t>(f.out) +
          static_cast<std::size_t>(o)] = a.z[q][r];
    }
  }
}

// Block `slab` of mixing entry b, thread by thread (the host's run of the device kernel,
// device_resident_store.cuh's mixed_forward_kernel, for the tests).
inline void mixed_block_on_host(const MixBatch& m, const MixedForwardPlan& f, float* models,
                                std::size_t P, int b, int slab) {
  static thread_local float s_w[kMixedWeightFloats], s_x[kMixedExampleFloats];
  static thread_local MixedAccumulators acc[kMixedThreads];
  for (MixedAccumulators& a : acc)
    a = {};
  const int o0 = slab * kMixedOut;
  for (int i0 = 0; i0 < f.in; i0 += kMixedIn) {
    for (int t = 0; t < kMixedThreads; ++t)
      mixed_load(m, f, models, P, b, o0, i0, t, s_w, s_x);
    const int inputs = f.in - i0 < kMixedIn ? f.in - i0 : kMixedIn;
    for (int t = 0; t < kMixedThreads; ++t)
      mixed_accumulate(t, s_w, s_x, inputs, acc[t]);
  }
  for (int t = 0; t < kMixedThreads; ++t)
    mixed_store(m, f, b, o0, t, acc[t]);
}

} // namespace dtsim::cuda
