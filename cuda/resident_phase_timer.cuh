// SPDX-License-Identifier: MIT
// Where a resident batch's device time goes, timed by events on its stream: the queued
// mixing, the local steps, and the stream's idle wait between one batch's steps and the
// next batch's first work, which is the time the device waited for the host (the engine's
// events, the hooks, the next batch's plans). With the pass's own marks (upload, compute,
// download) these say whether a round is bound by the device's kernels or by the host.
#pragma once

#include "cuda/device_memory.cuh"
#include "sim/engine/batched_gradients.hpp"

namespace dtsim::cuda {
namespace {

class ResidentPhaseTimer {
public:
  // Before a resident batch's mixing is queued, and after it.
  void batch_started(cudaStream_t s) {
    Slot& slot = next_slot();
    record(slot.begin, s);
    slot.idle_from = last_steps_end_;
    last_steps_end_ = nullptr;
    slot.mixing_pending = false;
  }
  void mixing_queued(cudaStream_t s) {
    Slot& slot = slots_[current_];
    record(slot.mixed, s);
    slot.mixing_pending = true;
  }
  // Around a batch's local steps (finish()): the steps are left running, so they are read
  // later, once their events have completed.
  void steps_started(cudaStream_t s) {
    if (current_ < 0) // steps without a timed batch before them
      return;
    record(slots_[current_].steps_begin, s);
  }
  void steps_queued(cudaStream_t s) {
    if (current_ < 0)
      return;
    Slot& slot = slots_[current_];
    record(slot.steps_end, s);
    slot.steps_pending = true;
    last_steps_end_ = &slot.steps_end;
  }

  // Sets sums' phase times to what has completed, without waiting; with `wait`, waits for the rest
  // first (the run's end: the last batch's steps may still be running).
  void harvest(TransferStats& sums, bool wait) {
    for (Slot& slot : slots_)
      harvest(slot, wait, wait);
    sums.mixing_seconds = mixing_s_;
    sums.steps_seconds = steps_s_;
    sums.idle_seconds = idle_s_;
  }

private:
  struct Slot {
    CudaEvent begin, mixed, steps_begin, steps_end;
    const CudaEvent* idle_from = nullptr; // the last batch's steps_end, when it had steps
    bool mixing_pending = false;
    bool steps_pending = false;
  };

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

  // Slot for the next batch: the one the batch before last used, whose events the stream
  // passed long ago (the last batch waited for its pass, queued behind them): read first,
  // waiting for nothing in practice. The last batch's mixing is over too (its losses came
  // after it), so its idle wait is read before this batch re-records its start.
  Slot& next_slot() {
    const int reused = (current_ + 1) % 2;
    if (current_ >= 0)
      harvest(slots_[current_], true, false);
    harvest(slots_[reused], true, true);
    current_ = reused;
    return slots_[current_];
  }

  void harvest(Slot& slot, bool wait_mixing, bool wait_steps) {
    if (slot.mixing_pending && done(slot.mixed, wait_mixing)) {
      mixing_s_ += seconds_between(slot.begin, slot.mixed);
      if (slot.idle_from)
        idle_s_ += seconds_between(*slot.idle_from, slot.begin);
      slot.idle_from = nullptr;
      slot.mixing_pending = false;
    }
    if (slot.steps_pending && done(slot.steps_end, wait_steps)) {
      steps_s_ += seconds_between(slot.steps_begin, slot.steps_end);
      slot.steps_pending = false;
    }
  }

  Slot slots_[2];
  int current_ = -1;
  const CudaEvent* last_steps_end_ = nullptr;
  double mixing_s_ = 0, steps_s_ = 0, idle_s_ = 0;
};

} // namespace
} // namespace dtsim::cuda
