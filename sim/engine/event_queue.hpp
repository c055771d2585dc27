// SPDX-License-Identifier: MIT
// The event queue: events ordered by simulated time, then by insertion order.
#pragma once

#include "sim/core/sim_time.hpp"

#include <cstdint>
#include <vector>

namespace dtsim {

// Queue events; `Update` only labels the per-update records of the trace's event log.
enum class EventKind : std::int32_t {
  GradientReady,
  MessageArrival,
  Timer,
  Evaluation,
  Stop,
  Update,
  OrderMessage, // an example orderer's coordination message arrives (CD-GraB)
  OrderTimer    // an example orderer's timer (e.g. its coordinator's service time)
};
const char* to_string(EventKind k);

struct Event {
  SimTime time;
  std::uint64_t seq = 0; // insertion counter: equal times pop in scheduling order
  EventKind kind = EventKind::Stop;
  std::int32_t node = -1;
  std::int32_t peer = -1;
  std::int64_t arg = 0; // kind-specific: message slot, timer tag
};

// Min-heap on (time, seq): deterministic whatever the heap's internal order. Cancellation is
// lazy: a cancelled sequence number is skipped when it reaches the top.
class EventQueue {
public:
  std::uint64_t push(SimTime time, EventKind kind, std::int32_t node, std::int32_t peer = -1,
                     std::int64_t arg = 0);
  bool empty();
  const Event& top();
  Event pop();
  void cancel(std::uint64_t seq);
  std::size_t size() const { return heap_.size(); }
  std::uint64_t scheduled() const { return next_seq_; }

private:
  void drop_cancelled();
  std::vector<Event> heap_;
  std::vector<std::uint64_t> cancelled_; // sorted
  std::uint64_t next_seq_ = 0;
};

} // namespace dtsim
