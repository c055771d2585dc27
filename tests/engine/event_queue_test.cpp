// SPDX-License-Identifier: MIT
// EventQueue: time order, FIFO ties, lazy cancellation.
#include "sim/engine/event_queue.hpp"

#include <doctest/doctest.h>

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

  TEST_CASE("EventQueue: cancelled events are skipped") {
    EventQueue q;
    q.push(SimTime::from_ns(1), EventKind::Timer, 0);
    const auto b = q.push(SimTime::from_ns(2), EventKind::Timer, 1);
    q.push(SimTime::from_ns(3), EventKind::Timer, 2);
    const auto d = q.push(SimTime::from_ns(0), EventKind::Timer, 3);
    q.cancel(b);
    q.cancel(d);
    CHECK(q.pop().node == 0);
    CHECK(q.pop().node == 2);
    CHECK(q.empty());
  }
}
