// SPDX-License-Identifier: MIT
// The device's whole-vector compressions (ResidentCompression's forms other than QSGD by
// buckets), run by one block over a vector: its sums in a fixed-order tree, top-k's and
// random-k's radix selection (radix_select.hpp's passes, TopK::encode's), and the elements.
// Shared by a resident CHOCO-SGD's steps (device_choco.cuh: the difference x_half - xhat)
// and a resident SwarmSGD's encodings (device_codec.cuh: the model itself).
#pragma once

#include "cuda/device_memory.cuh"
#include "cuda/resident_math.hpp"
#include "sim/optimizers/compression/radix_select.hpp"

#include <cstdint>

namespace dtsim::cuda {
namespace {

// v summed over the block's Threads threads by a tree in a fixed order (the same inputs
// give the same bits); part holds Threads values.
template <int Threads, class T> __device__ T block_sum(T v, T* part) {
  static_assert((Threads & (Threads - 1)) == 0, "the tree halves the block");
  const int t = static_cast<int>(threadIdx.x);
  part[t] = v;
  __syncthreads();
  for (int width = Threads / 2; width > 0; width /= 2) {
    if (t < width)
      part[t] += part[t + width];
    __syncthreads();
  }
  const T total = part[0];
  __syncthreads(); // before part is written again
  return total;
}

// The key by which top-k (|d|) and random-k (a hash) rank element e: the keep largest are kept.
__device__ inline std::uint32_t selection_key(const ResidentCompression& form, float d,
                                              std::uint64_t seed, std::uint64_t step,
                                              std::size_t e) {
  return form.kind == ResidentCompression::Kind::top_k ? magnitude_key(d)
                                                       : counter_key(seed, step, e);
}

// radix_choose by the block's first warp: lane l sums the l-th range of 2^width / 32 bins
// from the top, a scan over the lanes finds the range that holds the rank, and its lane
// walks it (radix_choose_in): 2 x 64 steps instead of up to 2,048 for one thread. The
// same digit as radix_choose (a host test runs these steps).
__device__ void warp_radix_choose(RadixDigit digit, const std::uint32_t* counts,
                                  RadixSelection* shared) {
  constexpr unsigned kAll = 0xFFFFFFFFu;
  const auto lane = static_cast<std::uint32_t>(threadIdx.x);
  const std::uint32_t per = (1u << digit.width) / 32;
  const std::uint32_t high = (32 - lane) * per, low = high - per;
  unsigned long long range = 0;
  // Each lane starts at its own offset, so that a step's 32 reads fall in 32 banks (every
  // low is a multiple of 32); the sum of counts is the same in any order.
  for (std::uint32_t i = 0; i < per; ++i)
    range += counts[low + (i + lane) % per];
  unsigned long long through = range; // candidates in lanes 0..lane's ranges
  for (int offset = 1; offset < 32; offset *= 2) {
    const unsigned long long before = __shfl_up_sync(kAll, through, offset);
    if (lane >= static_cast<std::uint32_t>(offset))
      through += before;
  }
  const std::size_t rank = shared->rank; // read by every lane before the owner writes
  const unsigned holds = __ballot_sync(kAll, through >= rank);
  if (holds != 0 && lane == static_cast<std::uint32_t>(__ffs(static_cast<int>(holds)) - 1)) {
    RadixSelection s = *shared;
    s.rank -= static_cast<std::size_t>(through - range);
    radix_choose_in(digit, counts, low, high, s);
    *shared = s;
  }
}

// The keep-th largest key of the difference d (P floats) by radix selection
// (radix_select.hpp's passes, TopK::encode's), the digits counted in shared memory by
// integer atomics (their order cannot change a count). Every thread returns the selection.
template <int Threads>
__device__ RadixSelection select_keys(const ResidentCompression& form, const float* d,
                                      std::size_t P, std::uint64_t seed, std::uint64_t step,
                                      std::uint32_t* counts, RadixSelection* shared) {
  const int t = static_cast<int>(threadIdx.x);
  if (t == 0) {
    *shared = RadixSelection{};
    shared->rank = form.keep;
  }
  for (int pass = 0; pass < kRadixPasses; ++pass) {
    const RadixDigit digit = radix_digit(pass);
    for (std::size_t i = static_cast<std::size_t>(t); i < kRadixBins; i += Threads)
      counts[i] = 0;
    __syncthreads(); // the counts cleared, the selection so far written
    const RadixSelection sel = *shared;
    for (std::size_t e = static_cast<std::size_t>(t); e < P; e += Threads) {
      const std::uint32_t key = selection_key(form, d[e], seed, step, e);
      if (radix_candidate(sel, key))
        atomicAdd(counts + radix_bin(digit, key), 1u);
    }
    __syncthreads();
    if (t < 32)
      warp_radix_choose(digit, counts, shared);
    __syncthreads();
  }
  return *shared;
}

// The shared memory of compress_whole_block, for a block of Threads threads.
template <int Threads> struct CompressionShared {
  std::uint32_t counts[kRadixBins];
  RadixSelection selection;
  std::uint32_t warp_ties[Threads / 32];
};

// The block's compression of d (P floats, whose sum of squares and of magnitudes the caller
// has, as every thread has them) by `form`: for top-k and random-k first the selection; then,
// in chunks of the block's width in index order, q = whole_compression_element into out (and
// xhat += q where xhat is not null). Where the selection keeps only some of the keys equal to
// the threshold, each chunk counts them (a warp's by ballot, the warps' in warp order) so
// that the lowest indices are kept, as TopK::encode keeps them, until the last of them is
// placed. Returns the thread's share of sum (q - d)^2 (zero for QSGD passing its vector
// through, which Qsgd::encode counts as no error). Every thread of the block calls it.
template <int Threads>
__device__ float compress_whole_block(const ResidentCompression& form, const float* d,
                                      std::size_t P, float norm, float l1, std::uint64_t seed,
                                      std::uint64_t step, float* out, float* xhat,
                                      CompressionShared<Threads>& shared) {
  using Kind = ResidentCompression::Kind;
  constexpr int kWarps = Threads / 32;
  const int t = static_cast<int>(threadIdx.x);
  const bool selects = form.kind == Kind::top_k || form.kind == Kind::random_k;
  RadixSelection sel;
  if (selects) // uniform over the block
    sel = select_keys<Threads>(form, d, P, seed, step, shared.counts, &shared.selection);
  const bool every_tie = sel.rank == sel.at_digit;
  WholeCompression w;
  w.kind = form.kind;
  if (w.kind == Kind::sign)
    w.scale = l1 / static_cast<float>(P);
  else if (w.kind == Kind::random_k)
    w.scale = form.contractive ? 1.0f : static_cast<float>(P) / static_cast<float>(form.keep);
  else if (w.kind == Kind::qsgd)
    w.qsgd = qsgd_bucket(norm, P, form.bits, form.contractive);
  const int lane = t % 32, warp = t / 32;
  std::size_t ties_before = 0; // keys equal to the threshold in the chunks before this one
  float errors = 0;
  for (std::size_t first = 0; first < P; first += Threads) { // the same for all
    const std::size_t e = first + static_cast<std::size_t>(t);
    const bool valid = e < P;
    const float v_d = valid ? d[e] : 0.0f;
    bool kept = false;
    if (selects) {
      const std::uint32_t key = valid ? selection_key(form, v_d, seed, step, e) : 0u;
      const bool tie = valid && key == sel.prefix;
      kept = valid && key > sel.prefix;
      if (every_tie) {
        kept = kept || tie;
      } else if (ties_before < sel.rank) { // ties_before is every thread's: a uniform branch
        const unsigned ties = __ballot_sync(0xFFFFFFFFu, tie);
        if (lane == 0)
          shared.warp_ties[warp] = static_cast<std::uint32_t>(__popc(ties));
        __syncthreads();
        std::size_t rank =
            ties_before + static_cast<std::size_t>(__popc(ties & ((1u << lane) - 1)));
        for (int v = 0; v < kWarps; ++v) {
          if (v < warp)
            rank += shared.warp_ties[v];
          ties_before += shared.warp_ties[v];
        }
        kept = kept || (tie && rank < sel.rank);
        __syncthreads(); // before the next chunk's counts
      }
    }
    if (!valid)
      continue;
    const float q = whole_compression_element(
        w, v_d, kept, w.kind == Kind::qsgd ? counter_uniform(seed, step, e) : 0.0f);
    out[e] = q;
    if (xhat)
      xhat[e] += q;
    errors += (q - v_d) * (q - v_d);
  }
  return w.kind == Kind::qsgd && w.qsgd.pass_through ? 0.0f : errors;
}

} // namespace
} // namespace dtsim::cuda
