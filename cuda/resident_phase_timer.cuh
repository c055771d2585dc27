// SPDX-License-Identifier: MIT
// PhaseTimer (phase_timer.hpp) on a CUDA stream: its marks are events.
#pragma once

#include "cuda/device_memory.cuh"
#include "cuda/phase_timer.hpp"

namespace dtsim::cuda {
namespace {

struct CudaMarks {
  using Mark = CudaEvent;
  using Stream = cudaStream_t;
  static void record(CudaEvent& e, cudaStream_t s) {
    check(cudaEventRecord(e.event, s), "cudaEventRecord (resident phases)");
  }
  static bool done(const CudaEvent& e, bool wait) {
    if (wait) {
      check(cudaEventSynchronize(e.event), "cudaEventSynchronize (resident phases)");
      return true;
    }
    const cudaError_t status = cudaEventQuery(e.event);
    if (status == cudaErrorNotReady)
      return false;
    check(status, "cudaEventQuery (resident phases)");
    return true;
  }
  static double seconds(const CudaEvent& from, const CudaEvent& to) {
    return seconds_between(from, to);
  }
};

using ResidentPhaseTimer = PhaseTimer<CudaMarks>;

} // namespace
} // namespace dtsim::cuda
