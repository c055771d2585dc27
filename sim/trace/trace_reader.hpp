// SPDX-License-Identifier: MIT
// read_trace: loads a dtsim HDF5 trace (docs/trace-schema.md) into plain containers.
#pragma once

#include "sim/engine/trace_sink.hpp"

#include <cstddef>
#include <cstdint>
#include <map>
#include <string>
#include <vector>

namespace dtsim {

// Everything in a trace except the event log (which can be large; see read_events).
// Root attributes are split by type: strings into text_attributes, integers and floats into
// number_attributes (the uint64 seed also exactly, in `seed`). Datasets a killed run had not
// yet written (per-node columns, staleness histogram) are empty.
struct TraceContents {
  std::map<std::string, std::string> text_attributes;
  std::map<std::string, double> number_attributes;
  std::map<std::string, std::vector<double>> metrics; // /metrics/<name>, one value per row
  std::map<std::string, std::vector<double>> epochs;  // /epochs/<name> (eval.per_epoch), or empty
  std::map<std::string, std::vector<double>> nodes;   // /nodes/<name>, one value per node
  std::vector<std::int64_t> staleness_histogram;
  std::vector<std::vector<std::int64_t>> label_histogram; // nodes x classes
  std::size_t num_events = 0;
  std::uint64_t seed = 0;
};

// throws: ConfigError "<path>: not a dtsim trace (<why>)" for a missing file, a file that is
// not HDF5, or one without the dtsim layout or with another schema_version.
TraceContents read_trace(const std::string& path);

// Only the root attributes (name, seed, scenario, status, build, ...): what a resumed sweep
// needs to know about a finished trace, without reading its tables.
// throws: ConfigError as read_trace.
TraceContents read_trace_attributes(const std::string& path);

// The /events log in file order; empty when the run kept no events.
// throws: ConfigError as read_trace.
std::vector<EventRecord> read_events(const std::string& path);

} // namespace dtsim
