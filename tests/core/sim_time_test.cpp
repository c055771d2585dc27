// SPDX-License-Identifier: MIT
// SimTime: integer nanoseconds, exact sums.
#include "sim/core/sim_time.hpp"

#include <cmath>
#include <doctest/doctest.h>
#include <stdexcept>

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

  TEST_CASE("SimTime: a time past the clock's range throws instead of wrapping") {
    CHECK_THROWS_AS(SimTime::from_seconds(1e10), std::overflow_error);
    CHECK_THROWS_AS(SimTime::from_seconds(std::nan("")), std::overflow_error);
    CHECK_THROWS_WITH(SimTime::from_seconds(4e12),
                      "simulated time of 4e+12 s is past the clock's range (9.2e9 s, 292 years)");
    const SimTime near_end = SimTime::from_seconds(9e9);
    CHECK_THROWS_AS(near_end + near_end, std::overflow_error);
    SimTime sum = near_end;
    CHECK_THROWS_AS(sum += near_end, std::overflow_error);
    CHECK((near_end + SimTime::from_seconds(1e8)).seconds() == doctest::Approx(9.1e9));
  }
}
