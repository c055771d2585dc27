// SPDX-License-Identifier: MIT
// SimTime: integer nanoseconds, exact sums.
#include "sim/core/sim_time.hpp"

#include <doctest/doctest.h>

using dtsim::SimTime;

TEST_SUITE("core") {
  TEST_CASE("SimTime: seconds round to the nearest nanosecond and sums are exact") {
    CHECK(SimTime::from_seconds(0.1).ns() == 100000000);
    SimTime t;
    for (int i = 0; i < 10; ++i)
      t += SimTime::from_seconds(0.1);
    CHECK(t == SimTime::from_seconds(1.0));
    CHECK(SimTime::from_ns(5) < SimTime::from_ns(6));
    CHECK(SimTime::from_seconds(2.5).seconds() == 2.5);
  }
}
