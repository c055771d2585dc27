// SPDX-License-Identifier: MIT
// Whole runs compared through their in-memory traces: the same rows, per-node columns and
// staleness histogram, bit for bit; and a run's attributes (header, end of run) by
// name.
#pragma once

#include "sim/trace/memory_trace_sink.hpp"
#include "support/trace_compare.hpp"

#include <doctest/doctest.h>
#include <string>

namespace dtsim::testing {

template <class Attributes>
double attribute_in(const Attributes& attributes, const std::string& name, const char* where) {
  for (const auto& [n, v] : attributes)
    if (n == name)
      return v;
  FAIL("no " << where << " attribute " << name);
  return 0;
}

inline double summary_attribute(const MemoryTraceSink& s, const std::string& name) {
  return attribute_in(s.summary().number_attributes, name, "end-of-run");
}

inline double header_attribute(const MemoryTraceSink& s, const std::string& name) {
  return attribute_in(s.header().number_attributes, name, "header");
}

// /metrics and /epochs rows, /nodes columns and the staleness histogram all identical.
inline void check_same_run(const MemoryTraceSink& a, const MemoryTraceSink& b) {
  check_identical_rows(a.rows(), b.rows());
  check_identical_rows(a.epoch_rows(), b.epoch_rows());
  const auto& na = a.summary().node_columns;
  const auto& nb = b.summary().node_columns;
  REQUIRE(na.size() == nb.size());
  for (std::size_t c = 0; c < na.size(); ++c) {
    CAPTURE(na[c].first);
    CHECK(na[c] == nb[c]);
  }
  CHECK(a.summary().staleness_histogram == b.summary().staleness_histogram);
}

} // namespace dtsim::testing
