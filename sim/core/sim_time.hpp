// SPDX-License-Identifier: MIT
// Simulated time: an integer count of nanoseconds, never a floating-point sum.
#pragma once

#include <cmath>
#include <compare>
#include <cstdint>
#include <cstdio>
#include <limits>
#include <stdexcept>
#include <string>

namespace dtsim {

// A point or span of simulated time in integer nanoseconds. Separate from wall time.
// Conversions from seconds round to the nearest nanosecond so that repeated additions
// are exact and event order never depends on floating-point rounding. The clock spans about
// ±292 years; a time past it (a latency of 1e10 s, a compute time drawn from a huge
// distribution) throws std::overflow_error instead of wrapping to a negative time.
class SimTime {
public:
  // The largest span in seconds a scenario key may give: far below the clock's limit, so that
  // sums of such spans over a run stay on the clock.
  static constexpr double kMaxKeySeconds = 1e9;

  constexpr SimTime() = default;
  static constexpr SimTime from_ns(std::int64_t ns) { return SimTime(ns); }
  static SimTime from_seconds(double s) {
    if (!(std::fabs(s) < kLimitSeconds)) // NaN too
      overflow(s);
    return SimTime(std::llround(s * 1e9));
  }
  static constexpr SimTime max() { return SimTime(std::numeric_limits<std::int64_t>::max()); }

  constexpr std::int64_t ns() const { return ns_; }
  constexpr double seconds() const { return static_cast<double>(ns_) * 1e-9; }

  constexpr SimTime operator+(SimTime o) const {
    std::int64_t sum = 0;
    if (__builtin_add_overflow(ns_, o.ns_, &sum))
      overflow(seconds() + o.seconds());
    return SimTime(sum);
  }
  constexpr SimTime operator-(SimTime o) const { return SimTime(ns_ - o.ns_); }
  constexpr SimTime& operator+=(SimTime o) { return *this = *this + o; }
  constexpr auto operator<=>(const SimTime&) const = default;

private:
  static constexpr double kLimitSeconds = 9.2e9; // int64 nanoseconds: 9.22e9 s
  [[noreturn]] static void overflow(double seconds) {
    char text[32];
    std::snprintf(text, sizeof text, "%.3g", seconds);
    throw std::overflow_error(std::string("simulated time of ") + text +
                              " s is past the clock's range (9.2e9 s, 292 years)");
  }

  constexpr explicit SimTime(std::int64_t ns) : ns_(ns) {}
  std::int64_t ns_ = 0;
};

} // namespace dtsim
