// SPDX-License-Identifier: MIT
// EventQueue: time order, FIFO ties, agreement with a reference under churn.
#include "sim/engine/event_queue.hpp"

#include <algorithm>
#include <doctest/doctest.h>
#include <utility>
#include <vector>

using namespace dtsim;

TEST_SUITE("engine") {
  TEST_CASE("EventQueue: pops by time, ties in insertion order") {
    EventQueue q;
    q.push(SimTime::from_ns(30), EventKind::Timer, 0);
    q.push(SimTime::from_ns(10), EventKind::Timer, 1);
    q.push(SimTime::from_ns(20), EventKind::Timer, 2);
    for (int i = 3; i < 10; ++i)
      q.push(SimTime::from_ns(10), EventKind::Timer, i);
    std::vector<int> order;
    while (!q.empty())
      order.push_back(q.pop().node);
    CHECK(order == std::vector<int>{1, 3, 4, 5, 6, 7, 8, 9, 2, 0});
  }

  TEST_CASE("EventQueue: interleaved pushes and pops match a sorted reference") {
    // Many ties (times drawn from 50 values) and a queue that grows and shrinks, so that the
    // 4-ary sift paths and slot reuse are all exercised; the reference is (time, seq) order.
    EventQueue q;
    std::vector<std::pair<std::int64_t, int>> pending; // (time, node = push index)
    std::uint64_t state = 12345;
    auto next = [&state] {
      state = state * 6364136223846793005ULL + 1442695040888963407ULL;
      return state >> 33;
    };
    std::int64_t now = 0;
    int pushed = 0;
    for (int step = 0; step < 20000; ++step) {
      const bool push = pending.empty() || next() % 100 < (step < 10000 ? 60 : 40);
      if (push) {
        const std::int64_t t = now + static_cast<std::int64_t>(next() % 50);
        q.push(SimTime::from_ns(t), EventKind::Timer, pushed, -1, 7 * pushed);
        pending.emplace_back(t, pushed++);
      } else {
        const auto it = std::min_element(pending.begin(), pending.end());
        const Event e = q.pop();
        REQUIRE(e.time.ns() == it->first);
        REQUIRE(e.node == it->second);
        CHECK(e.arg == 7 * e.node);
        CHECK(e.seq == static_cast<std::uint64_t>(e.node));
        now = e.time.ns();
        pending.erase(it);
      }
      REQUIRE(q.size() == pending.size());
    }
    CHECK(q.scheduled() == static_cast<std::uint64_t>(pushed));
  }
}
