// SPDX-License-Identifier: MIT
// PhaseTimer's bookkeeping (the resident device batches' mixing, local steps and idle wait,
// cuda/phase_timer.hpp) on marks of a scripted stream: what it sums, when it may read a
// mark, and that reusing a slot's marks never reads one recorded again.
#include "cuda/phase_timer.hpp"

#include <doctest/doctest.h>
#include <vector>

using dtsim::cuda::PhaseTimer;

namespace {

// A stream whose marks get the time the test says the stream will reach them at; the stream
// reaches them when the test advances it (or a waiting read forces it there).
struct ScriptedStream {
  double at = 0;      // the time the next recorded mark will be reached at
  double reached = 0; // the stream has reached every mark up to this time
};

struct ScriptedMarks {
  struct Mark {
    const ScriptedStream* stream = nullptr;
    double time = -1;
  };
  using Stream = ScriptedStream*;
  int* waits = nullptr; // counts reads that had to wait
  void record(Mark& m, ScriptedStream* s) const { m = Mark{s, s->at}; }
  bool done(const Mark& m, bool wait) const {
    REQUIRE(m.stream != nullptr); // never read before it was recorded
    if (m.time <= m.stream->reached)
      return true;
    if (wait) {
      ++*waits;
      return true;
    }
    return false;
  }
  double seconds(const Mark& from, const Mark& to) const {
    REQUIRE(from.time >= 0);
    REQUIRE(to.time >= from.time);
    return to.time - from.time;
  }
};

// One resident batch: its mixing from `begin` to `mixed`, its pass queued up to `passed`,
// its steps (when steps_end > 0) from steps_begin to steps_end; the stream then reaches
// `mixed` and what came before (the host waited for the pass's losses, queued after the
// mixing).
struct Batch {
  double begin, mixed, passed, steps_begin = 0, steps_end = 0;
};
void run(PhaseTimer<ScriptedMarks>& timer, ScriptedStream& s, const Batch& b) {
  s.at = b.begin;
  timer.batch_started(&s);
  s.at = b.mixed;
  timer.mixing_queued(&s);
  s.at = b.passed;
  timer.pass_queued(&s);
  if (b.steps_end > 0) {
    s.at = b.steps_begin;
    timer.steps_started(&s);
    s.at = b.steps_end;
    timer.steps_queued(&s);
  }
  s.reached = b.mixed;
}

} // namespace

TEST_SUITE("cuda") {
  TEST_CASE("Resident phase timer: the mixing, the steps and the idle wait between batches") {
    int waits = 0;
    ScriptedStream s;
    PhaseTimer<ScriptedMarks> timer(ScriptedMarks{&waits});
    run(timer, s, {0, 1, 2, 3, 5});    // steps 2 s, 1 s idle before them (after-hooks)
    run(timer, s, {7, 8, 10, 10, 13}); // 2 s idle after the first batch's steps
    // Read without waiting: the second batch's steps are still running.
    auto t = timer.harvest(false);
    CHECK(t.mixing == 2);
    CHECK(t.steps == 2);
    CHECK(t.idle == 1 + 2);
    CHECK(waits == 0);
    // A third batch reuses the first one's marks: the second batch's idle wait, which ends
    // at the first batch's steps_end, was read before that mark was recorded again.
    run(timer, s, {13, 14.5, 16, 16, 17});
    run(timer, s, {17.5, 18, 19}); // no steps: the next batch has no idle wait to count
    run(timer, s, {30, 31, 32, 32.5, 33});
    CHECK(waits == 0); // every slot reused had been passed by the stream
    t = timer.harvest(false);
    CHECK(t.mixing == 1 + 1 + 1.5 + 0.5 + 1);
    CHECK(t.idle == 1 + 2 + 0 + 0.5 + 0); // the last batch's steps (and wait) still running
    CHECK(t.steps == 2 + 3 + 1);
    t = timer.harvest(true); // the run's end waits for them
    CHECK(t.steps == 2 + 3 + 1 + 0.5);
    CHECK(t.idle == 1 + 2 + 0 + 0.5 + 0.5);
    CHECK(waits == 1);
  }

  TEST_CASE("Resident phase timer: steps without a timed batch are not counted") {
    int waits = 0;
    ScriptedStream s;
    PhaseTimer<ScriptedMarks> timer(ScriptedMarks{&waits});
    timer.steps_started(&s);
    timer.steps_queued(&s);
    const auto t = timer.harvest(true);
    CHECK(t.mixing == 0);
    CHECK(t.steps == 0);
    CHECK(t.idle == 0);
  }
}
