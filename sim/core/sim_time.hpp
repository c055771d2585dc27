// SPDX-License-Identifier: MIT
// Simulated time: an integer count of nanoseconds, never a floating-point sum.
#pragma once

#include <cmath>
#include <compare>
#include <cstdint>
#include <limits>

namespace dtsim {

// A point or span of simulated time in integer nanoseconds. Separate from wall time.
// Conversions from seconds round to the nearest nanosecond so that repeated additions
// are exact and event order never depends on floating-point rounding.
class SimTime {
public:
  constexpr SimTime() = default;
  static constexpr SimTime from_ns(std::int64_t ns) { return SimTime(ns); }
  static SimTime from_seconds(double s) { return SimTime(std::llround(s * 1e9)); }
  static constexpr SimTime max() { return SimTime(std::numeric_limits<std::int64_t>::max()); }

  constexpr std::int64_t ns() const { return ns_; }
  constexpr double seconds() const { return static_cast<double>(ns_) * 1e-9; }

  constexpr SimTime operator+(SimTime o) const { return SimTime(ns_ + o.ns_); }
  constexpr SimTime operator-(SimTime o) const { return SimTime(ns_ - o.ns_); }
  constexpr SimTime& operator+=(SimTime o) {
    ns_ += o.ns_;
    return *this;
  }
  constexpr auto operator<=>(const SimTime&) const = default;

private:
  constexpr explicit SimTime(std::int64_t ns) : ns_(ns) {}
  std::int64_t ns_ = 0;
};

} // namespace dtsim
