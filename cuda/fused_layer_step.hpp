// SPDX-License-Identifier: MIT
// The local step of an MLP layer's weights fused with their gradient: a block holds a 64 x
// 64 tile of a node's W (out x in, column-major, at the layer's offset in its row), computes
// the tile's gradient dz x^T from the pass's delta and input of that layer (both still in the
// pass's scratch) and applies the local step to it at once (local_step_element), so that
// the gradient is never written to memory nor read back: per node-step two vectors of the
// layer's weights less to move, and cuBLAS's weight-gradient GEMM gone. The first two layers
// take it (their deltas are the last the pass writes to its two delta buffers): 200,704 and
// 32,768 of the 784-256-128-10 MLP's 235,146 floats, whose weight-gradient GEMMs each ran at
// 43% of the H100's DRAM bandwidth (runs 10 and 16 of docs/cuda.md). By default a block
// copies its tiles of the model and momentum into shared memory as it starts, so that they
// arrive while its sums run (fused_tile_copy). Per thread as functions here, so that the host
// tests run the kernels' blocks thread by thread.
#pragma once

#include "cuda/resident_math.hpp"

#include <cstddef>
#include <cstdint>
#include <stdexcept>

namespace dtsim::cuda {

constexpr int kFusedTile = 64;     // outputs and inputs per block
constexpr int kFusedThreads = 256; // 8 warps: lane -> outputs lane, lane + 32; warp -> 8 inputs
constexpr int kFusedExamples = 32; // examples per load into shared memory
constexpr int kFusedOutPerThread = kFusedTile / 32;
constexpr int kFusedInPerThread = kFusedTile / (kFusedThreads / 32);
// The shared arrays' floats each: kFusedExamples rows of the tile's 64 outputs or inputs.
constexpr int kFusedShared = kFusedExamples * kFusedTile;
// A tile of W (or of its momentum) in shared memory: 64 x 64, input-major (in * 64 + out).
constexpr int kFusedTileFloats = kFusedTile * kFusedTile;

// Where the pass left a layer's pieces: chunk position p (node first_node + p) has its delta
// dz at dz + p * out * n (out x n, column-major: the mean loss's gradient with respect to the
// layer's pre-activations) and its input at x + p * in * n (in x n: the minibatch for the
// first layer, the first layer's activations for the second), or, for a first layer whose
// minibatch the pass did not gather (x null: mixed_first_layer.hpp), its n indices at
// idx + p * n into the training set (in x examples, column-major). The layer's W starts at
// `offset` in each node's row.
struct FusedLayerPlan {
  const float* dz = nullptr;
  const float* x = nullptr;
  int out = 0;
  int in = 0;
  int n = 0;
  int first_node = 0;
  const float* train = nullptr;
  const std::uint32_t* idx = nullptr;
  std::size_t offset = 0;
  // The elements of a row this layer's weights take: [offset, end()).
  DTSIM_HD std::size_t end() const {
    return offset + static_cast<std::size_t>(out) * static_cast<std::size_t>(in);
  }
};

// The plans of the layers a batch's local steps take fused, first layer first: at most the
// layers a pass can leave (run_mlp_batch's kDeferrableLayers).
struct FusedLayers {
  FusedLayerPlan plan[kDeferrableLayers];
  int count = 0;
  // Whether each block copies its tiles of the model and momentum into shared memory while
  // its gradient sums run (fused_tile_copy), instead of loading them after (KernelChoices).
  bool prefetch = true;
  // With prefetch, and a minibatch of one load (n <= kFusedExamples): the sums' inputs
  // copied the same way, before the tiles (fused_layer_step_prefetch_kernel<true>).
  bool sums_first = true;
};

// The plans of a pass run with its first `layers` layers' weight gradients deferred
// (run_mlp_batch): layer l's delta in buf.delta[l % 2] and its input, the minibatch (read by
// index from the training set where the pass did not gather it) or the layer below's
// activations, for the chunk whose position 0 is node first_node.
inline FusedLayers fused_layer_plans(const MlpBatchShape& shape, const MlpBatchBuffers& buf, int n,
                                     int first_node, bool gathered, int layers) {
  if (layers < 0 || layers > deferrable_layers(shape))
    throw std::invalid_argument("fused layer plans: more layers than a pass can leave");
  FusedLayers f;
  for (int l = 0; l < layers; ++l) {
    const BatchLayer& L = shape.layers[static_cast<std::size_t>(l)];
    FusedLayerPlan& p = f.plan[l];
    p = {buf.delta[l % 2], l == 0 ? buf.x : buf.act[l - 1], L.out, L.in, n, first_node};
    p.offset = L.offset;
    if (l == 0 && !gathered) { // only the first layer's input can be read by index
      p.x = nullptr;
      p.train = buf.train;
      p.idx = buf.idx;
    }
  }
  f.count = layers;
  return f;
}

// f(from, to) for each stretch [from, to) of a row of P floats outside the fused layers'
// weights (all of it without `fused`), in row order: what the plain step tiles take.
template <class F> void for_each_unfused_range(const FusedLayers* fused, std::size_t P, F f) {
  const int layers = fused ? fused->count : 0;
  std::size_t from = 0;
  for (int l = 0; l <= layers; ++l) {
    const std::size_t to = l < layers ? fused->plan[l].offset : P;
    if (to > from)
      f(from, to);
    if (l < layers)
      from = fused->plan[l].end();
  }
}

// Blocks per node: the tiles over W's outputs (fastest) and inputs.
DTSIM_HD inline int fused_tiles_out(const FusedLayerPlan& f) {
  return (f.out + kFusedTile - 1) / kFusedTile;
}
DTSIM_HD inline int fused_tiles(const FusedLayerPlan& f) {
  return fused_tiles_out(f) * ((f.in + kFusedTile - 1) / kFusedTile);
}

// The accumulators of one thread: its outputs' gradients over its inputs.
struct FusedAccumulators {
  float g[kFusedOutPerThread][kFusedInPerThread];
};

// The copy of element `at` of `from` into shared memory at dst, or a zero there where
// `valid` is false (then nothing is read): the load the host and the plain kernels take,
// where the device's prefetching kernel takes an asynchronous copy (cp.async).
struct CopyOrZero {
  DTSIM_HD void operator()(float* dst, const float* from, std::size_t at, bool valid) const {
    *dst = valid ? from[at] : 0.0f;
  }
};

// The floats a thread copies into a shared array are kFusedRowsPerPass rows of it apart, all
// in the thread's one column (t % 64): its column, and so whether its source lies in the
// layer, stay the same from pass to pass, and its source index moves by a fixed step. Worked
// out once, not per float (nvcc's code for the per-float index arithmetic had been about ten
// instructions a float, in a kernel whose instruction issue is as near its limit as its
// memory traffic: docs/cuda-measurements.md, sixth lease).
constexpr int kFusedRowsPerPass = kFusedThreads / kFusedTile;
static_assert(kFusedThreads % kFusedTile == 0, "a thread keeps its column from pass to pass");

// Thread t's share of loading examples [k0, k0 + kc) of position p's tile (outputs from
// o0, inputs from i0) into s_dz[k][c] and s_x[k][c] (zero past the layer's edges), each float
// by copy(dst, from, at, valid) (CopyOrZero's).
template <class Copy = CopyOrZero>
DTSIM_HD inline void fused_load(const FusedLayerPlan& f, int p, int o0, int i0, int k0, int kc,
                                int t, float* s_dz, float* s_x, const Copy& copy = {}) {
  const int c = t % kFusedTile, r0 = t / kFusedTile;
  const bool out_in = o0 + c < f.out, in_in = i0 + c < f.in;
  const auto out = static_cast<std::size_t>(f.out), in = static_cast<std::size_t>(f.in);
  const float* dz = f.dz + static_cast<std::size_t>(p) * out * f.n;
  std::size_t dz_at = static_cast<std::size_t>(k0 + r0) * out + o0 + c; // row k0 + r0's
  if (f.x) { // the gathered minibatch: example k is its column k
    const float* x = f.x + static_cast<std::size_t>(p) * in * f.n;
    std::size_t x_at = static_cast<std::size_t>(k0 + r0) * in + i0 + c;
    for (int r = r0; r < kc;
         r += kFusedRowsPerPass, dz_at += kFusedRowsPerPass * out, x_at += kFusedRowsPerPass * in) {
      copy(s_dz + r * kFusedTile + c, dz, dz_at, out_in);
      copy(s_x + r * kFusedTile + c, x, x_at, in_in);
    }
    return;
  }
  const std::uint32_t* idx = f.idx + static_cast<std::size_t>(p) * f.n; // by index
  for (int r = r0; r < kc; r += kFusedRowsPerPass, dz_at += kFusedRowsPerPass * out) {
    copy(s_dz + r * kFusedTile + c, dz, dz_at, out_in);
    copy(s_x + r * kFusedTile + c, f.train, idx[k0 + r] * in + i0 + c, in_in);
  }
}

// A thread's kFusedInPerThread inputs of one example from the shared array at `from`
// (16-byte aligned: the kernels' s_x is, and each thread's inputs start at a multiple of 8
// floats). On the device by 16-byte loads: nvcc loaded them one float at a time, 8 of the
// 10 shared loads per example and thread, in a kernel whose instruction issue is as near its
// limit as its memory traffic (docs/cuda-measurements.md, sixth lease). The same floats either way.
DTSIM_HD inline void fused_inputs(const float* from, float (&x)[kFusedInPerThread]) {
  static_assert(kFusedInPerThread % 4 == 0, "16-byte loads of a thread's inputs");
#ifdef __CUDA_ARCH__
  DTSIM_UNROLL
  for (int q = 0; q < kFusedInPerThread / 4; ++q) {
    const float4 v = reinterpret_cast<const float4*>(from)[q];
    x[4 * q] = v.x;
    x[4 * q + 1] = v.y;
    x[4 * q + 2] = v.z;
    x[4 * q + 3] = v.w;
  }
#else
  for (int ji = 0; ji < kFusedInPerThread; ++ji)
    x[ji] = from[ji];
#endif
}

// Thread t adds the loaded kc examples' products to its accumulators, in example order.
DTSIM_HD inline void fused_accumulate(int t, const float* s_dz, const float* s_x, int kc,
                                      FusedAccumulators& a) {
  const int lane = t % 32, first_in = t / 32 * kFusedInPerThread;
  for (int k = 0; k < kc; ++k) {
    const float* dz = s_dz + k * kFusedTile;
    float x[kFusedInPerThread];
    fused_inputs(s_x + k * kFusedTile + first_in, x);
    DTSIM_UNROLL
    for (int jo = 0; jo < kFusedOutPerThread; ++jo) {
      const float d = dz[lane + 32 * jo];
      DTSIM_UNROLL
      for (int ji = 0; ji < kFusedInPerThread; ++ji)
        a.g[jo][ji] += d * x[ji];
    }
  }
}

// Weight (jo, ji) of thread t in the tile at (o0, i0): its element of the row, its place in
// a shared tile (fused_tile_copy's) and whether it is in the layer.
struct FusedWeight {
  std::size_t e;
  int v;
  bool in_layer;
};
DTSIM_HD inline FusedWeight fused_weight(const FusedLayerPlan& f, int o0, int i0, int t, int jo,
                                         int ji) {
  const int out = t % 32 + 32 * jo, in = t / 32 * kFusedInPerThread + ji; // in the tile
  const int o = o0 + out, i = i0 + in;
  return {f.offset + static_cast<std::size_t>(i) * f.out + o, in * kFusedTile + out,
          o < f.out && i < f.in};
}

// Thread t's outputs of step entry b's tile: the local step of each weight with its
// accumulated gradient (the model and momentum loaded from memory after the sums, all before
// anything is stored, as in local_step_tile). The weights are at the plan's offset in the
// node's row of P floats. Loading the model and momentum before the sums instead, into
// registers, to have them in flight while the sums run, was slower: 1.89 ms per 1,024-node
// round at 54% of the H100's DRAM bandwidth against 1.43 ms at 71% (runs 15 and 14 of
// docs/cuda.md; the registers they hold cost more than the latency they hide).
// fused_tile_copy has them in flight without registers.
DTSIM_HD inline void fused_step(const StepBatch& s, const FusedLayerPlan& f, float* grads,
                                const float* models, float* momenta, std::size_t P, int b, int o0,
                                int i0, int t, const FusedAccumulators& a) {
  const StepRows r = step_rows(s, grads, models, momenta, P, b);
  float x[kFusedOutPerThread][kFusedInPerThread], m_old[kFusedOutPerThread][kFusedInPerThread];
  DTSIM_UNROLL
  for (int jo = 0; jo < kFusedOutPerThread; ++jo) {
    DTSIM_UNROLL
    for (int ji = 0; ji < kFusedInPerThread; ++ji) {
      const FusedWeight w = fused_weight(f, o0, i0, t, jo, ji);
      x[jo][ji] = w.in_layer ? r.x[w.e] : 0.0f;
      m_old[jo][ji] = w.in_layer && r.m ? r.m[w.e] : 0.0f;
    }
  }
  with_step_rule(s, r, [&](const StepBatch& rule) {
    DTSIM_UNROLL
    for (int jo = 0; jo < kFusedOutPerThread; ++jo) {
      DTSIM_UNROLL
      for (int ji = 0; ji < kFusedInPerThread; ++ji) {
        const FusedWeight w = fused_weight(f, o0, i0, t, jo, ji);
        if (w.in_layer)
          local_step_element(rule, r.lr, a.g[jo][ji], x[jo][ji], m_old[jo][ji], r.g + w.e,
                             r.m ? r.m + w.e : nullptr, r.out ? r.out + w.e : nullptr);
      }
    }
  });
}

// Thread t's share of copying the tile at (o0, i0) of row r's model and momentum (none
// without one) into the shared tiles w and m, by copy(dst, row, e, in_layer) (CopyOrZero's):
// in_layer false past the layer's edges, where dst is to be zero (e then never read). On
// the device an asynchronous copy (cp.async) that the block's gradient sums overlap; each
// warp copies 128 consecutive bytes of a column of W at a time.
template <class Copy>
DTSIM_HD inline void fused_tile_copy(const FusedLayerPlan& f, const StepRows& r, int o0, int i0,
                                     int t, float* w, float* m, const Copy& copy) {
  const int o = o0 + t % kFusedTile; // the thread's output, the same in every pass
  const bool out_in = o < f.out;
  int i = i0 + t / kFusedTile;
  std::size_t e = f.offset + static_cast<std::size_t>(i) * f.out + o;
  for (int v = t; v < kFusedTileFloats; v += kFusedThreads, i += kFusedRowsPerPass,
           e += kFusedRowsPerPass * static_cast<std::size_t>(f.out)) {
    const bool in_layer = out_in && i < f.in;
    copy(w + v, r.x, e, in_layer);
    if (r.m)
      copy(m + v, r.m, e, in_layer);
  }
}

// Thread t's outputs of the tile with its model and momentum from the shared tiles that
// fused_tile_copy filled (and the block has waited for), one weight at a time: shared loads
// do not wait for the global stores before them, so nothing is gained by holding them all in
// registers first (as fused_step must), and the block keeps fewer registers. The weights'
// places are fused_weight's, worked out from the first weight's by fixed steps (an output 32
// floats on, an input a column of W on), not each by its own products; the rule's flags
// constants for the heavy ball (with_step_rule).
DTSIM_HD inline void fused_step_from_tiles(const StepBatch& s, const FusedLayerPlan& f,
                                           const StepRows& r, int o0, int i0, int t,
                                           const FusedAccumulators& a, const float* w,
                                           const float* m) {
  const FusedWeight first = fused_weight(f, o0, i0, t, 0, 0);
  const int o = o0 + t % 32, i = i0 + t / 32 * kFusedInPerThread; // the first weight's
  const auto column = static_cast<std::size_t>(f.out);
  const auto each_weight = [&](const StepBatch& rule) {
    DTSIM_UNROLL
    for (int jo = 0; jo < kFusedOutPerThread; ++jo) {
      const bool out_in = o + 32 * jo < f.out;
      DTSIM_UNROLL
      for (int ji = 0; ji < kFusedInPerThread; ++ji) {
        const std::size_t e = first.e + 32 * jo + ji * column;
        const int v = first.v + 32 * jo + ji * kFusedTile;
        if (out_in && i + ji < f.in)
          local_step_element(rule, r.lr, a.g[jo][ji], w[v], r.m ? m[v] : 0.0f, r.g + e,
                             r.m ? r.m + e : nullptr, r.out ? r.out + e : nullptr);
      }
    }
  };
  with_step_rule(s, r, each_weight);
}

// Block `tile` of step entry b, thread by thread (the host's run of the device kernels,
// device_resident_store.cuh's fused_layer_step_kernel, for the tests); with `prefetch`, of
// fused_layer_step_prefetch_kernel, the tiles of the model and momentum copied first.
inline void fused_block_on_host(const StepBatch& s, const FusedLayerPlan& f, float* grads,
                                const float* models, float* momenta, std::size_t P, int b, int tile,
                                bool prefetch = false) {
  const int tiles_out = fused_tiles_out(f);
  const int o0 = tile % tiles_out * kFusedTile, i0 = tile / tiles_out * kFusedTile;
  const int p = s.node[b] - f.first_node;
  static thread_local float s_dz[kFusedShared], s_x[kFusedShared];
  static thread_local float s_w[kFusedTileFloats], s_m[kFusedTileFloats];
  static thread_local FusedAccumulators acc[kFusedThreads];
  for (FusedAccumulators& a : acc)
    a = {};
  const StepRows r = step_rows(s, grads, models, momenta, P, b);
  if (prefetch)
    for (int t = 0; t < kFusedThreads; ++t)
      fused_tile_copy(f, r, o0, i0, t, s_w, s_m, CopyOrZero{});
  for (int k0 = 0; k0 < f.n; k0 += kFusedExamples) {
    const int kc = f.n - k0 < kFusedExamples ? f.n - k0 : kFusedExamples;
    for (int t = 0; t < kFusedThreads; ++t)
      fused_load(f, p, o0, i0, k0, kc, t, s_dz, s_x);
    for (int t = 0; t < kFusedThreads; ++t)
      fused_accumulate(t, s_dz, s_x, kc, acc[t]);
  }
  for (int t = 0; t < kFusedThreads; ++t)
    if (prefetch)
      fused_step_from_tiles(s, f, r, o0, i0, t, acc[t], s_w, s_m);
    else
      fused_step(s, f, grads, models, momenta, P, b, o0, i0, t, acc[t]);
}

} // namespace dtsim::cuda
