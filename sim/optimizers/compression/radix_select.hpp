// SPDX-License-Identifier: MIT
// The k-th largest of 32-bit keys by radix selection, one digit at a time from the top
// (11 + 11 + 10 bits): three counting passes instead of a branchy nth_element. The host's
// top-k and a device's resident CHOCO-SGD (top-k and random-k) run these same steps.
#pragma once

#include "sim/core/host_device.hpp"

#include <cmath>
#include <cstddef>
#include <cstdint>
#include <cstring>

namespace dtsim {

// Pass p's digit: its shift and width (2^11 bins at most).
struct RadixDigit {
  int shift;
  int width;
};
inline constexpr int kRadixPasses = 3;
inline constexpr std::size_t kRadixBins = 2048;
DTSIM_HD constexpr RadixDigit radix_digit(int pass) {
  return pass == 0 ? RadixDigit{21, 11} : pass == 1 ? RadixDigit{10, 11} : RadixDigit{0, 10};
}

// The selection so far: the keys that match `prefix` under `mask` are still candidates,
// and the wanted key is the rank-th largest of them (rank from 1).
struct RadixSelection {
  std::uint32_t prefix = 0;
  std::uint32_t mask = 0;
  std::size_t rank = 0;
  // How many candidates have the digit chosen last: after the last pass, how many keys
  // equal the wanted one (rank of them are kept, the lowest indices first).
  std::size_t at_digit = 0;
};

DTSIM_HD inline bool radix_candidate(const RadixSelection& s, std::uint32_t key) {
  return (key & s.mask) == s.prefix;
}
DTSIM_HD inline std::uint32_t radix_bin(RadixDigit d, std::uint32_t key) {
  return (key >> d.shift) & ((1u << d.width) - 1);
}
// After the candidates' digits were counted into counts (2^width bins): fixes the wanted
// key's digit, walking the bins [low, high) from the largest, s.rank counted from `high`
// (a device's warp has each lane sum a range and the lane whose range holds the rank walk
// it). False where the range holds fewer than s.rank candidates (s.rank less them then).
DTSIM_HD inline bool radix_choose_in(RadixDigit d, const std::uint32_t* counts, std::uint32_t low,
                                     std::uint32_t high, RadixSelection& s) {
  const std::uint32_t digits = (1u << d.width) - 1;
  for (std::uint32_t v = high; v-- > low;) {
    if (s.rank <= counts[v]) {
      s.prefix |= v << d.shift;
      s.mask |= digits << d.shift;
      s.at_digit = counts[v];
      return true;
    }
    s.rank -= counts[v];
  }
  return false;
}
// The same over every bin.
DTSIM_HD inline void radix_choose(RadixDigit d, const std::uint32_t* counts, RadixSelection& s) {
  radix_choose_in(d, counts, 0, 1u << d.width, s);
}

// A magnitude as its IEEE bit pattern, which orders non-negative floats like their values;
// NaN counts as +inf (the largest), so that a diverging vector never breaks the ordering.
DTSIM_HD inline std::uint32_t magnitude_key(float x) {
  const float a = fabsf(x);
  std::uint32_t bits = 0;
  memcpy(&bits, &a, sizeof bits);
  return a != a ? 0x7F800000u : bits;
}

} // namespace dtsim
