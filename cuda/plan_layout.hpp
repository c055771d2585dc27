// SPDX-License-Identifier: MIT
// A batch's plan arrays (the resident store's node ids, message addresses, weights, rates)
// laid out one after another in one buffer, so that they go up to the device in one copy:
// each small copy on the batches' stream costs the device a few microseconds before the
// kernel after it may start, and a round of the goal row had made nine of them.
#pragma once

#include <cstddef>

namespace dtsim::cuda {

class PlanLayout {
public:
  // Every array starts on this many bytes (more than any plan element needs; 16 bytes also
  // lets a kernel read four floats at a time).
  static constexpr std::size_t kAlign = 16;

  // Room for `count` elements of T after the arrays added before; returns its offset.
  template <class T> std::size_t add(std::size_t count) {
    static_assert(alignof(T) <= kAlign, "a plan element aligned beyond the layout's");
    const std::size_t at = (bytes_ + kAlign - 1) / kAlign * kAlign;
    bytes_ = at + count * sizeof(T);
    return at;
  }
  // The bytes from the first array's start to the last one's end: what one copy moves.
  std::size_t bytes() const { return bytes_; }

private:
  std::size_t bytes_ = 0;
};

} // namespace dtsim::cuda
