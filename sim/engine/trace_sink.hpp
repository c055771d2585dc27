// SPDX-License-Identifier: MIT
// TraceSink: where a run's records go (HDF5 file, memory for tests, nowhere). Header-only so
// that sim/trace implements it without linking the engine.
#pragma once

#include <cstdint>
#include <limits>
#include <string>
#include <utility>
#include <vector>

namespace dtsim {

enum class RunStatus { Running, Completed, Diverged, Interrupted, Failed };
inline const char* to_string(RunStatus s) {
  switch (s) {
  case RunStatus::Running:
    return "running";
  case RunStatus::Completed:
    return "completed";
  case RunStatus::Diverged:
    return "diverged";
  case RunStatus::Interrupted:
    return "interrupted";
  case RunStatus::Failed:
    return "failed";
  }
  return "unknown";
}

// Written once when the run starts.
struct RunHeader {
  std::string name;
  std::string scenario_yaml; // the fully resolved scenario
  std::uint64_t seed = 0;
  std::vector<std::pair<std::string, std::string>> text_attributes; // e.g. dtsim_version
  std::vector<std::pair<std::string, double>> number_attributes;    // e.g. num_params
  std::vector<std::vector<std::int64_t>> label_histogram;           // nodes x classes
};

// One evaluation. Every row of a run has the same column names in the same order.
struct MetricsRow {
  std::vector<std::pair<std::string, double>> columns;
  double get(const std::string& name) const { // NaN if absent
    for (const auto& [k, v] : columns)
      if (k == name)
        return v;
    return std::numeric_limits<double>::quiet_NaN();
  }
};

// One simulator event, recorded only when output.events = full.
struct EventRecord {
  std::int64_t time_ns = 0;
  std::int32_t kind = 0;
  std::int32_t node = -1;
  std::int32_t peer = -1;
  std::int64_t staleness = -1;
  std::int64_t bytes = 0;
  std::int64_t wait_ns = 0; // update records: time the update waited (server queue + hold)
  std::int32_t held = 0;    // update records: 1 if a scheduler held it back
};

// Written once when the run ends (whatever the status).
struct RunSummary {
  RunStatus status = RunStatus::Completed;
  std::string message; // why it stopped, e.g. the divergence or the error
  double wall_seconds = 0.0;
  std::vector<std::pair<std::string, std::vector<double>>> node_columns; // per node
  std::vector<std::int64_t> staleness_histogram; // [s] = updates with staleness s; last = ">="
  std::vector<std::pair<std::string, double>> number_attributes;
  std::vector<std::string> warnings; // stored as the text attribute `warnings`, one per line
};

// requires: begin() first, then metrics()/epoch()/event() any number of times, then finish()
// once.
// A sink must leave a readable record after every metrics() call (a killed run keeps its
// rows and says status = running).
class TraceSink {
public:
  virtual ~TraceSink() = default;
  virtual void begin(const RunHeader& header) = 0;
  virtual void metrics(const MetricsRow& row, double wall_seconds) = 0;
  // One row of the per-epoch table (/epochs), written only with eval.per_epoch; every row
  // has the same columns.
  virtual void epoch(const MetricsRow&) {}
  virtual void event(const EventRecord&) {}
  virtual void finish(const RunSummary& summary) = 0;
};

} // namespace dtsim
