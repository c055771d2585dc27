// SPDX-License-Identifier: MIT
// Shared inputs of the trace tests: a scratch directory and a small, fully specified run.
#pragma once

#include "sim/engine/trace_sink.hpp"

#include <cstdint>
#include <filesystem>
#include <limits>
#include <string>
#include <system_error>
#include <unistd.h>

namespace dtsim::test {

// A fresh directory per test process (ctest may run the cases in parallel), removed at the end.
struct TempDir {
  std::filesystem::path path;
  explicit TempDir(const std::string& name)
      : path(std::filesystem::temp_directory_path() /
             ("dtsim_trace_test_" + std::to_string(::getpid()) + "_" + name)) {
    std::filesystem::remove_all(path);
    std::filesystem::create_directories(path);
  }
  ~TempDir() {
    std::error_code ec;
    std::filesystem::remove_all(path, ec);
  }
  TempDir(const TempDir&) = delete;
  TempDir& operator=(const TempDir&) = delete;
  std::string file(const std::string& name) const { return (path / name).string(); }
};

// The seed is above 2^53 so that only an exact uint64 round trip passes.
inline RunHeader sample_header() {
  RunHeader h;
  h.name = "unit_run";
  h.scenario_yaml = "name: unit_run\nseed: 18364758544493064720\nnodes: 3\n";
  h.seed = 18364758544493064720ULL;
  h.text_attributes = {{"dtsim_version", "0.1.0-test"}, {"algorithm", "dsgd"}};
  h.number_attributes = {{"num_params", 1234.0}, {"spectral_gap", 0.25}};
  h.label_histogram = {{5, 0, 1, 2}, {0, 7, 0, 1}, {3, 3, 3, 3}};
  return h;
}

inline MetricsRow sample_row(int i) {
  MetricsRow r;
  r.columns = {{"sim_time_s", 0.5 * i},
               {"updates", 10.0 * i},
               {"test_accuracy", 0.1 + 0.01 * i},
               {"test_loss", i == 1 ? std::numeric_limits<double>::quiet_NaN() : 2.0 - 0.1 * i}};
  return r;
}

inline double sample_wall(int i) {
  return 0.125 * (i + 1);
}

inline EventRecord sample_event(int i) {
  EventRecord e;
  e.time_ns = 1000LL * i + (1LL << 40);
  e.kind = i % 5;
  e.node = i % 3;
  e.peer = i % 4 == 0 ? -1 : (i + 1) % 3;
  e.staleness = i % 7 - 1;
  e.bytes = 100LL * i;
  return e;
}

inline RunSummary sample_summary(RunStatus status) {
  RunSummary s;
  s.status = status;
  s.message = std::string("ended: ") + to_string(status);
  s.wall_seconds = 2.5;
  s.node_columns = {{"updates", {10, 11, 12}},
                    {"compute_s", {1.5, 1.25, 1.75}},
                    {"idle_s", {0.0, 0.5, 0.25}},
                    {"bytes_sent", {1e6, 2e6, 3e6}},
                    {"bytes_received", {3e6, 2e6, 1e6}}};
  s.staleness_histogram = {5, 4, 3, 2, 1};
  s.number_attributes = {{"final_test_accuracy", 0.875}};
  s.warnings = {"only 2 evaluations", "second warning"};
  return s;
}

} // namespace dtsim::test
