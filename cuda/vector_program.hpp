// SPDX-License-Identifier: MIT
// A run of element-wise steps on a resident backend's vectors that a device runs as one
// kernel: ResidentVectors::apply's steps and a pairwise method's decodings and own views,
// queued on the engine thread between two batches. Every step reads and writes element e of
// its vectors alone, so a thread that takes its elements through the steps in call order
// computes what the steps would one kernel each, with the same per-element code and so the
// same bits; the run then costs one launch instead of one per step. (SwarmSGD's interactions
// had cost a launch per step, about a dozen an interaction, and on an H100 its device waited
// for the engine thread 36 of every 42 ms; with programs, 17.5 of 23.3, its encodings still a
// kernel each and a flush of the program before each.) An encoding without a whole-vector
// sum (float32, float16, the lattice quantizer) is such a step too: its figures are each
// block's sums of its threads' squares, left in the encoding's slot (encode_step, below).
#pragma once

#include "cuda/resident_math.hpp"

#include <cstddef>
#include <cstdint>

namespace dtsim::cuda {

// One step of a program.
struct ProgramStep {
  enum class Kind : std::uint8_t {
    vector,         // dst = op(a, b, s, t, u): vector_op_tile
    sum,            // op on a parameter server's double sum: sum_tile (out: dst)
    lattice_decode, // dst = the lattice index a decoded against ref; failures counted
    scale,          // dst = a * s: the lattice's own view of its indices
    encode,         // dst = the code of a (`codec`'s form); the block's squares to `partials`
  };
  Kind kind = Kind::vector;
  ResidentVectors::VectorOp op = ResidentVectors::VectorOp::copy;
  float* dst = nullptr;
  const float* a = nullptr;
  float* b = nullptr;
  const float* ref = nullptr; // lattice_decode's reference
  double* sum = nullptr;
  unsigned long long* failures = nullptr; // lattice_decode's count (the node's)
  float s = 0, t = 0, u = 0;
  LatticeCodec lattice = {};
  // encode's own: the form (none: float32, half, lattice), the node's stream and this
  // encoding's counter (the lattice's stochastic rounding), and where block k of the kernel
  // leaves its (error^2, norm^2) pair: partials[2 k], partials[2 k + 1].
  ResidentCodec::Kind codec = ResidentCodec::Kind::none;
  std::uint64_t seed = 0, count = 0;
  float* partials = nullptr;

  static ProgramStep vector_step(ResidentVectors::VectorOp op, float* dst, const float* a, float* b,
                                 float s, float t, float u) {
    return {Kind::vector, op, dst, a, b, nullptr, nullptr, nullptr, s, t, u, {}};
  }
  // accumulate: sum += a (s > 0) or -= a; mean_of_sum: out = sum * (1 / s).
  static ProgramStep sum_step(ResidentVectors::VectorOp op, double* sum, float* out, const float* a,
                              float s) {
    return {Kind::sum, op, out, a, nullptr, nullptr, sum, nullptr, s, 0, 0, {}};
  }
  static ProgramStep decode_step(const LatticeCodec& c, const float* wire, const float* ref,
                                 float* out, unsigned long long* failures) {
    return {Kind::lattice_decode,
            ResidentVectors::VectorOp::copy,
            out,
            wire,
            nullptr,
            ref,
            nullptr,
            failures,
            0,
            0,
            0,
            c};
  }
  static ProgramStep encode_step(ResidentCodec::Kind codec, const LatticeCodec& c, const float* x,
                                 float* wire, std::uint64_t seed, std::uint64_t count,
                                 float* partials) {
    ProgramStep k;
    k.kind = Kind::encode;
    k.dst = wire;
    k.a = x;
    k.lattice = c;
    k.codec = codec;
    k.seed = seed;
    k.count = count;
    k.partials = partials;
    return k;
  }
  static ProgramStep scale_step(const float* a, float* out, float s) {
    return {Kind::scale, ResidentVectors::VectorOp::copy,
            out,         a,
            nullptr,     nullptr,
            nullptr,     nullptr,
            s,           0,
            0,           {}};
  }
};

// Steps per program: a kernel's parameters hold it (under the 4 KB that every CUDA version
// allows), and a run of more is flushed in programs of this many.
constexpr int kProgramSteps = 32;

// A program's kernel: blocks of kProgramThreads threads, each thread kProgramTile elements of
// every vector, kProgramThreads apart; an encoding's figures are a pair per block.
constexpr int kProgramThreads = 256;
constexpr int kProgramTile = 4;
constexpr std::size_t program_blocks(std::size_t P) {
  constexpr std::size_t per_block = std::size_t{kProgramTile} * kProgramThreads;
  return (P + per_block - 1) / per_block;
}

// Up to N steps. The store queues into one of kProgramSteps and launches a run of a few
// steps as a program of kShortProgram: a kernel's parameters are copied at every launch, and
// four steps take 488 of the long program's 3,848 bytes.
template <int N> struct BasicVectorProgram {
  int count = 0;
  ProgramStep steps[N];

  bool empty() const { return count == 0; }
  bool full() const { return count == N; }
  // The owner runs and clears a full program before the next push.
  void push(const ProgramStep& step) { steps[count++] = step; }
};
using VectorProgram = BasicVectorProgram<kProgramSteps>;
constexpr int kShortProgram = 4;
using ShortVectorProgram = BasicVectorProgram<kShortProgram>;
static_assert(sizeof(VectorProgram) <= 4000, "a program is passed as a kernel's parameter");

// The first `count` steps of p (count <= N) as a program of N.
template <int N, int M> BasicVectorProgram<N> first_steps(const BasicVectorProgram<M>& p) {
  BasicVectorProgram<N> out;
  for (int i = 0; i < p.count && i < N; ++i)
    out.push(p.steps[i]);
  return out;
}

// A decoding failure counted (an integer count: the same total in any order).
DTSIM_HD inline void count_failure(unsigned long long* failures) {
#if defined(__CUDA_ARCH__)
  atomicAdd(failures, 1ull);
#else
  ++*failures;
#endif
}

// A tile of a lattice decoding: out = lattice_decode(wire, ref), failures counted.
template <int J>
DTSIM_HD inline void lattice_decode_tile(const LatticeCodec& c, const float* wire, const float* ref,
                                         float* out, unsigned long long* failures, std::size_t P,
                                         std::size_t e0, std::size_t stride) {
  DTSIM_UNROLL
  for (int j = 0; j < J; ++j) {
    const std::size_t e = e0 + static_cast<std::size_t>(j) * stride;
    if (e >= P)
      break;
    bool failed = false;
    out[e] = lattice_decode(c, wire[e], ref[e], &failed);
    if (failed)
      count_failure(failures);
  }
}

// An encoding's squares over one thread's elements, which the block then sums by
// block_pair_tree's order.
struct EncodeSquares {
  float norm = 0, error = 0; // sum x^2, sum (Q(x) - x)^2
};

// Element e of an encoding: wire[e] = the code of x[e] (float32: itself; half: rounded to
// half; lattice: its index, rounded stochastically by the node's counter-based stream or to
// the nearest), its squares added in element order.
DTSIM_HD inline void encode_element(const ProgramStep& k, std::size_t e, EncodeSquares& sq) {
  const float v = k.a[e];
  sq.norm += v * v;
  if (k.codec != ResidentCodec::Kind::lattice) { // the wire is the value (decoded)
    const float w = k.codec == ResidentCodec::Kind::half ? round_to_half(v) : v;
    k.dst[e] = w;
    sq.error += (w - v) * (w - v);
    return;
  }
  const LatticeCodec& c = k.lattice;
  const float index =
      lattice_index(c, v, c.stochastic ? counter_uniform(k.seed, k.count, e) : 0.0f);
  k.dst[e] = index;
  const float d = index * c.side - v;
  sq.error += d * d;
}

// The block's sum of its threads' values v[0 .. n) (n a power of two) in place, in the order a
// block's tree takes them: at each width w = n / 2, n / 4, ..., 1, v[t] += v[t + w] for t < w.
// The device sums in parallel by the same levels, so the host's loop takes the same order
// (the summands may differ in their last bits: the device may fuse a square into its sum).
DTSIM_HD inline void block_pair_tree(EncodeSquares* v, int n) {
  for (int width = n / 2; width > 0; width /= 2)
    for (int t = 0; t < width; ++t) {
      v[t].norm += v[t + width].norm;
      v[t].error += v[t + width].error;
    }
}

// f(e) for the tile's elements e0, e0 + stride, ... below P, in order.
template <int J, class F>
DTSIM_HD inline void each_of_tile(std::size_t P, std::size_t e0, std::size_t stride, const F& f) {
  DTSIM_UNROLL
  for (int j = 0; j < J; ++j) {
    const std::size_t e = e0 + static_cast<std::size_t>(j) * stride;
    if (e >= P)
      break;
    f(e);
  }
}

// A tile of one step; an encoding's squares added to sq (other steps leave it alone).
template <int J>
DTSIM_HD inline void step_tile(const ProgramStep& k, std::size_t P, std::size_t e0,
                               std::size_t stride, EncodeSquares& sq) {
  switch (k.kind) {
  case ProgramStep::Kind::vector:
    vector_op_tile<J>(k.op, k.dst, k.a, k.b, k.s, k.t, k.u, P, e0, stride);
    break;
  case ProgramStep::Kind::sum:
    sum_tile<J>(k.op, k.sum, k.dst, k.a, k.s, P, e0, stride);
    break;
  case ProgramStep::Kind::lattice_decode:
    lattice_decode_tile<J>(k.lattice, k.a, k.ref, k.dst, k.failures, P, e0, stride);
    break;
  case ProgramStep::Kind::scale:
    each_of_tile<J>(P, e0, stride, [&](std::size_t e) { k.dst[e] = k.a[e] * k.s; });
    break;
  case ProgramStep::Kind::encode:
    each_of_tile<J>(P, e0, stride, [&](std::size_t e) { encode_element(k, e, sq); });
    break;
  }
}

} // namespace dtsim::cuda
