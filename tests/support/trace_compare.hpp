// SPDX-License-Identifier: MIT
// Bit-for-bit comparison of trace rows, for the determinism tests (threads, sweeps, reruns).
#pragma once

#include "sim/engine/trace_sink.hpp"

#include <cmath>
#include <doctest/doctest.h>
#include <string>
#include <vector>

namespace dtsim::testing {

// Same rows, same columns, every value bit-identical (NaN equal to NaN). Columns that time
// the host (names containing "wall") are statistics, not results, and are skipped.
inline void check_identical_rows(const std::vector<MetricsRow>& a,
                                 const std::vector<MetricsRow>& b) {
  REQUIRE(a.size() == b.size());
  for (std::size_t r = 0; r < a.size(); ++r) {
    const auto& ca = a[r].columns;
    const auto& cb = b[r].columns;
    REQUIRE(ca.size() == cb.size());
    for (std::size_t c = 0; c < ca.size(); ++c) {
      if (ca[c].first.find("wall") != std::string::npos)
        continue;
      CAPTURE(r);
      CAPTURE(ca[c].first);
      CHECK(ca[c].first == cb[c].first);
      CHECK(
          (ca[c].second == cb[c].second || (std::isnan(ca[c].second) && std::isnan(cb[c].second))));
    }
  }
}

} // namespace dtsim::testing
