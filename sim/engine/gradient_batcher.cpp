// SPDX-License-Identifier: MIT
// One batch: before-hooks in parallel, the backend once, after-hooks in parallel, the losses.
#include "sim/engine/gradient_batcher.hpp"

#include "sim/core/errors.hpp"
#include "sim/engine/gradient_slot.hpp"

#include <algorithm>
#include <chrono>
#include <tbb/parallel_for.h>

namespace dtsim {

GradientBatcher::GradientBatcher(BatchedGradients& backend, int max_jobs)
    : backend_(backend), max_jobs_(static_cast<std::size_t>(max_jobs)) {
  // A node has at most one gradient in flight, so no batch outgrows the node count.
  pending_.reserve(static_cast<std::size_t>(max_jobs));
  running_.reserve(static_cast<std::size_t>(max_jobs));
  jobs_.reserve(static_cast<std::size_t>(max_jobs));
}

void GradientBatcher::add(GradientSlot& slot) {
  DTSIM_ASSERT(pending_.size() < max_jobs_, "more gradients in flight than nodes");
  pending_.push_back(&slot);
}

void GradientBatcher::run_pending() {
  DTSIM_ASSERT(running_.empty(), "a batch started while another ran (a hook called back?)");
  if (pending_.empty())
    return;
  // Swapped out first: the batch is fixed, and the slots it holds are marked done below. A
  // batch that throws (a hook, or the device) leaves its slots pending and the batcher
  // empty, so a later join of one of them fails its check instead of reading a stale
  // gradient.
  running_.swap(pending_);
  struct ClearRunning {
    std::vector<GradientSlot*>& running;
    ~ClearRunning() { running.clear(); }
  } clear_running{running_};
  using Clock = std::chrono::steady_clock;
  const auto t0 = Clock::now();
  const auto each = [this](auto&& body) {
    tbb::parallel_for(tbb::blocked_range<std::size_t>(0, running_.size(), 1),
                      [&](const tbb::blocked_range<std::size_t>& r) {
                        for (std::size_t i = r.begin(); i != r.end(); ++i)
                          body(i);
                      });
  };
  each([this](std::size_t i) { running_[i]->run_before_hook(); });
  jobs_.clear();
  for (GradientSlot* slot : running_)
    jobs_.push_back(slot->job());
  const auto t1 = Clock::now();
  backend_.compute(jobs_);
  const auto t2 = Clock::now();
  each([this](std::size_t i) { running_[i]->run_after_hook(); });
  backend_.finish(jobs_); // a resident backend runs the steps the hooks queued
  const auto t3 = Clock::now();
  backend_.collect(jobs_); // the losses a device left in flight
  for (std::size_t i = 0; i < running_.size(); ++i)
    running_[i]->complete(jobs_[i].loss);
  const auto t4 = Clock::now();
  ++batches_;
  jobs_run_ += static_cast<std::int64_t>(running_.size());
  largest_ = std::max(largest_, static_cast<std::int64_t>(running_.size()));
  gradient_wall_s_ += std::chrono::duration<double>((t2 - t1) + (t4 - t3)).count();
  hooks_wall_s_ += std::chrono::duration<double>((t1 - t0) + (t3 - t2)).count();
}

} // namespace dtsim
