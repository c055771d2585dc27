// SPDX-License-Identifier: MIT
// A run of element-wise steps on a resident backend's vectors that a device runs as one
// kernel: ResidentVectors::apply's steps and a pairwise method's decodings and own views,
// queued on the engine thread between two batches. Every step reads and writes element e of
// its vectors alone, so a thread that takes its elements through the steps in call order
// computes what the steps would one kernel each, with the same per-element code and so the
// same bits; the run then costs one launch instead of one per step. (SwarmSGD's interactions
// had cost a launch per step, about a dozen an interaction, and on an H100 its device waited
// for the engine thread 36 of every 42 ms.)
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

// Up to N steps. The store queues into one of kProgramSteps and launches a run of a few
// steps as a program of kShortProgram: a kernel's parameters are copied at every launch, and
// four steps take 392 of the long program's 3,080 bytes.
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

// A tile of one step.
template <int J>
DTSIM_HD inline void step_tile(const ProgramStep& k, std::size_t P, std::size_t e0,
                               std::size_t stride) {
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
    DTSIM_UNROLL
    for (int j = 0; j < J; ++j) {
      const std::size_t e = e0 + static_cast<std::size_t>(j) * stride;
      if (e >= P)
        break;
      k.dst[e] = k.a[e] * k.s;
    }
    break;
  }
}

// A tile of every step of the program, in order: element e of every vector is read and
// written by this thread alone.
template <int J, int N>
DTSIM_HD inline void program_tile(const BasicVectorProgram<N>& p, std::size_t P, std::size_t e0,
                                  std::size_t stride) {
  for (int i = 0; i < p.count; ++i)
    step_tile<J>(p.steps[i], P, e0, stride);
}

} // namespace dtsim::cuda
