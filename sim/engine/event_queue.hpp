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

// Min-queue on (time, seq), so the pop order is fully determined by the pushes.
//
// Why not std::priority_queue<Event>: a timing-only run of 1,000,000 nodes keeps millions of
// events queued, and popping a binary heap of 40-byte events misses the cache at each of its
// ~21 levels. Here the heap is 4-ary (log4: half the levels) over 16-byte keys (the four
// children of an entry share one 64-byte line); the rest of an event waits in a slot array
// that is touched once on push and once on pop.
class EventQueue {
public:
  std::uint64_t push(SimTime time, EventKind kind, std::int32_t node, std::int32_t peer = -1,
                     std::int64_t arg = 0);
  bool empty() const { return heap_.empty(); }
  Event pop();                                                                  // requires !empty()
  SimTime next_time() const { return SimTime::from_ns(heap_.front().time_ns); } // requires !empty()
  std::size_t size() const { return heap_.size(); }
  std::uint64_t scheduled() const { return next_seq_; }

private:
  // The order key: time, then seq; the slot rides in the low bits of `order` (seq is unique,
  // so seq-then-slot orders exactly as seq).
  struct Key {
    std::int64_t time_ns;
    std::uint64_t order; // seq << kSlotBits | slot
  };
  struct Payload {
    EventKind kind;
    std::int32_t node;
    std::int32_t peer;
    std::int64_t arg;
  };
  static constexpr int kSlotBits = 24; // up to 16.7 M queued events
  static constexpr int kArity = 4;
  // (time, order) as one unsigned 128-bit number (the time's sign bit flipped, so that
  // unsigned order is signed order): one comparison without branches, which the sift-down's
  // choice among four children, unpredictable by nature, then makes with conditional moves.
  __extension__ using Rank = unsigned __int128;
  static Rank rank(const Key& k) {
    return static_cast<Rank>(static_cast<std::uint64_t>(k.time_ns) ^ (std::uint64_t{1} << 63))
               << 64 |
           k.order;
  }
  static bool before(const Key& a, const Key& b) { return rank(a) < rank(b); }

  std::vector<Key> heap_;
  std::vector<Payload> payloads_;
  std::vector<std::uint32_t> free_slots_;
  std::uint64_t next_seq_ = 0;
};

} // namespace dtsim
