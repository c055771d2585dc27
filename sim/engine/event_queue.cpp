// SPDX-License-Identifier: MIT
// A 4-ary min-heap of (time, seq) keys; event payloads in a slot array.
#include "sim/engine/event_queue.hpp"

#include "sim/core/errors.hpp"

#include <algorithm>

namespace dtsim {
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
  std::uint32_t slot;
  if (free_slots_.empty()) {
    slot = static_cast<std::uint32_t>(payloads_.size());
    DTSIM_ASSERT(slot < (1u << kSlotBits), "more than 16.7 million events queued at once");
    payloads_.push_back({});
  } else {
    slot = free_slots_.back();
    free_slots_.pop_back();
  }
  payloads_[slot] = Payload{kind, node, peer, arg};
  const std::uint64_t seq = next_seq_++;
  DTSIM_ASSERT(seq < (std::uint64_t{1} << (64 - kSlotBits)), "event sequence number overflow");
  // Sift up: move parents down into the hole until the new key's place is found.
  const Key key{time.ns(), seq << kSlotBits | slot};
  std::size_t i = heap_.size();
  heap_.push_back(key);
  while (i > 0) {
    const std::size_t parent = (i - 1) / kArity;
    if (!before(key, heap_[parent]))
      break;
    heap_[i] = heap_[parent];
    i = parent;
  }
  heap_[i] = key;
  return seq;
}

Event EventQueue::pop() {
  DTSIM_ASSERT(!heap_.empty(), "pop() of an empty event queue");
  const Key top = heap_.front();
  const Key last = heap_.back();
  heap_.pop_back();
  const std::size_t n = heap_.size();
  if (n > 0) {
    // Sift the last key down from the root: move the smallest child up into the hole.
    std::size_t i = 0;
    for (;;) {
      const std::size_t first = i * kArity + 1;
      if (first >= n)
        break;
      std::size_t best = first;
      Rank best_rank = rank(heap_[first]);
      const std::size_t end = std::min(first + kArity, n);
      for (std::size_t c = first + 1; c < end; ++c) {
        const Rank r = rank(heap_[c]);
        const bool smaller = r < best_rank;
        best = smaller ? c : best;
        best_rank = smaller ? r : best_rank;
      }
      if (best_rank >= rank(last))
        break;
      heap_[i] = heap_[best];
      i = best;
    }
    heap_[i] = last;
  }
  const auto slot = static_cast<std::uint32_t>(top.order & ((1u << kSlotBits) - 1));
  const Payload& p = payloads_[slot];
  free_slots_.push_back(slot);
  return Event{
      SimTime::from_ns(top.time_ns), top.order >> kSlotBits, p.kind, p.node, p.peer, p.arg};
}

} // namespace dtsim
