// SPDX-License-Identifier: MIT
// Where a resident batch's device time goes, from marks a stream records as it reaches them:
// the queued mixing, the local steps, and the stream's idle time, where it waited for the
// host: between the pass (its losses' copy) and the local steps (the after-hooks, finish()'s
// plans), and between one batch's steps and the next batch's mixing (the engine's events,
// the before-hooks), the latter with whatever else was queued there (an evaluation, a
// pairwise method's steps: none in a synchronous round's steady state). Where the stream
// waits for the host, the mixing also counts the host's making of its plans, and the short
// staging of the pass's indices between the mixing and the pass counts nowhere. With the
// pass's own marks (upload, compute, download) these say whether a round is bound by the
// device's kernels or by the host. The marks' kind is a parameter so that the host tests
// drive the bookkeeping with marks of their own (tests/cuda/phase_timer_test.cpp); the
// device's are CUDA events (resident_phase_timer.cuh).
#pragma once

#include <utility>

namespace dtsim::cuda {

// Marks provides: a default-constructible Mark; record(Mark&, Stream) (the stream reaches it
// after what is queued so far); done(const Mark&, bool wait) (whether the stream has reached
// it, waiting for it with `wait`); seconds(const Mark& from, const Mark& to), both reached.
template <class Marks> class PhaseTimer {
public:
  using Mark = typename Marks::Mark;
  using Stream = typename Marks::Stream;

  explicit PhaseTimer(Marks marks = {}) : marks_(std::move(marks)) {}
  // Its slots point into each other: never copied or moved.
  PhaseTimer(const PhaseTimer&) = delete;
  PhaseTimer& operator=(const PhaseTimer&) = delete;

  // Before a resident batch's mixing is queued, and after it.
  void batch_started(Stream s) {
    Slot& slot = next_slot();
    marks_.record(slot.begin, s);
    slot.idle_from = last_steps_end_;
    last_steps_end_ = nullptr;
    slot.mixing_pending = false;
    slot.pass_done = false;
  }
  void mixing_queued(Stream s) {
    if (current_ < 0)
      return;
    Slot& slot = slots_[current_];
    marks_.record(slot.mixed, s);
    slot.mixing_pending = true;
  }
  // After the batch's pass and its losses' copy are queued (compute()'s end).
  void pass_queued(Stream s) {
    if (current_ < 0)
      return;
    marks_.record(slots_[current_].passed, s);
    slots_[current_].pass_done = true;
  }
  // Around a batch's local steps (finish()): the steps are left running, so they are read
  // later, once the stream has reached their end.
  void steps_started(Stream s) {
    if (current_ < 0) // steps without a timed batch before them
      return;
    marks_.record(slots_[current_].steps_begin, s);
  }
  void steps_queued(Stream s) {
    if (current_ < 0)
      return;
    Slot& slot = slots_[current_];
    marks_.record(slot.steps_end, s);
    slot.steps_pending = true;
    last_steps_end_ = &slot.steps_end;
  }

  // The phases' seconds that the stream has completed; with `wait`, after waiting for the
  // rest (the run's end: the last batch's steps may still be running).
  struct Seconds {
    double mixing = 0, steps = 0, idle = 0;
  };
  Seconds harvest(bool wait) {
    for (Slot& slot : slots_)
      read_slot(slot, wait, wait);
    return sums_;
  }

private:
  struct Slot {
    Mark begin, mixed, passed, steps_begin, steps_end;
    const Mark* idle_from = nullptr; // the last batch's steps_end, when it had steps
    bool mixing_pending = false;
    bool pass_done = false; // `passed` recorded for this batch
    bool steps_pending = false;
  };

  // The next batch's slot: the one the batch before last used, whose marks the stream
  // passed long ago (the last batch waited for its pass, queued behind them), read first,
  // so waiting for nothing in practice. The last batch's mixing is over too (its pass came
  // after it): its idle wait, which ends at a mark of the slot about to be reused, is read
  // before that mark is recorded again.
  Slot& next_slot() {
    const int reused = (current_ + 1) % 2;
    if (current_ >= 0)
      read_slot(slots_[current_], true, false);
    read_slot(slots_[reused], true, true);
    current_ = reused;
    return slots_[current_];
  }

  void read_slot(Slot& slot, bool wait_mixing, bool wait_steps) {
    if (slot.mixing_pending && marks_.done(slot.mixed, wait_mixing)) {
      sums_.mixing += marks_.seconds(slot.begin, slot.mixed);
      if (slot.idle_from)
        sums_.idle += marks_.seconds(*slot.idle_from, slot.begin);
      slot.idle_from = nullptr;
      slot.mixing_pending = false;
    }
    if (slot.steps_pending && marks_.done(slot.steps_end, wait_steps)) {
      sums_.steps += marks_.seconds(slot.steps_begin, slot.steps_end);
      if (slot.pass_done)
        sums_.idle += marks_.seconds(slot.passed, slot.steps_begin);
      slot.steps_pending = false;
    }
  }

  Marks marks_;
  Slot slots_[2];
  int current_ = -1;
  const Mark* last_steps_end_ = nullptr;
  Seconds sums_;
};

} // namespace dtsim::cuda
