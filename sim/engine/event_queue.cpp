// SPDX-License-Identifier: MIT
// Binary heap keyed on (time, seq).
#include "sim/engine/event_queue.hpp"

#include "sim/core/errors.hpp"

#include <algorithm>

namespace dtsim {
namespace {
// std heaps are max-heaps: "a < b" means b pops first.
bool later(const Event& a, const Event& b) {
  return a.time != b.time ? a.time > b.time : a.seq > b.seq;
}
} // namespace

const char* to_string(EventKind k) {
  switch (k) {
  case EventKind::GradientReady:
    return "gradient_ready";
  case EventKind::MessageArrival:
    return "message";
  case EventKind::Timer:
    return "timer";
  case EventKind::Evaluation:
    return "evaluation";
  case EventKind::Stop:
    return "stop";
  case EventKind::Update:
    return "update";
  case EventKind::OrderMessage:
    return "order_message";
  case EventKind::OrderTimer:
    return "order_timer";
  }
  return "?";
}

std::uint64_t EventQueue::push(SimTime time, EventKind kind, std::int32_t node, std::int32_t peer,
                               std::int64_t arg) {
  const std::uint64_t seq = next_seq_++;
  heap_.push_back(Event{time, seq, kind, node, peer, arg});
  std::push_heap(heap_.begin(), heap_.end(), later);
  return seq;
}

void EventQueue::cancel(std::uint64_t seq) {
  cancelled_.insert(std::upper_bound(cancelled_.begin(), cancelled_.end(), seq), seq);
}

void EventQueue::drop_cancelled() {
  while (!heap_.empty() && !cancelled_.empty()) {
    auto it = std::lower_bound(cancelled_.begin(), cancelled_.end(), heap_.front().seq);
    if (it == cancelled_.end() || *it != heap_.front().seq)
      return;
    cancelled_.erase(it);
    std::pop_heap(heap_.begin(), heap_.end(), later);
    heap_.pop_back();
  }
}

bool EventQueue::empty() {
  drop_cancelled();
  return heap_.empty();
}

const Event& EventQueue::top() {
  drop_cancelled();
  DTSIM_ASSERT(!heap_.empty(), "top() of an empty event queue");
  return heap_.front();
}

Event EventQueue::pop() {
  drop_cancelled();
  DTSIM_ASSERT(!heap_.empty(), "pop() of an empty event queue");
  std::pop_heap(heap_.begin(), heap_.end(), later);
  Event e = heap_.back();
  heap_.pop_back();
  return e;
}

} // namespace dtsim
