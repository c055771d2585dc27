// SPDX-License-Identifier: MIT
// Hdf5TraceSink: writes one run to an HDF5 file with the schema of docs/trace-schema.md.
#pragma once

#include "sim/engine/trace_sink.hpp"
#include "sim/trace/event_level.hpp"
#include "sim/trace/hdf5_handle.hpp"

#include <chrono>
#include <cstdint>
#include <string>
#include <vector>

namespace dtsim {

// Writes `<final_path>.work` while the run goes and renames it to `final_path` in finish(),
// whatever the status. After begin() and every metrics() or epoch() the work file is
// flushed and copied atomically to `<final_path>.partial` (see checkpoint()), so a run killed
// at any moment leaves a readable .partial with the rows up to its last checkpoint and status
// "running" (and maybe .work / .partial.tmp scratch files, replaced by the next run). Events
// are kept only for EventLevel::Full, buffered and appended in blocks of kEventBlock.
// Not thread-safe: call from the engine thread only. Schema version: kSchemaVersion.
// requires: the TraceSink call order (begin, metrics/event*, finish once).
class Hdf5TraceSink : public TraceSink {
public:
  static constexpr int kSchemaVersion = 1;
  static constexpr std::size_t kEventBlock = 4096; // events per append to /events
  static constexpr std::uint64_t kMetricsChunkRows = 256;
  // Up to this work-file size every flush is copied to the .partial; beyond, once a second.
  static constexpr std::uintmax_t kCheckpointEveryFlushBytes = 8u << 20;

  Hdf5TraceSink(std::string final_path, EventLevel events);
  // Closes the file without renaming if finish() was not called (the .partial stays).
  ~Hdf5TraceSink() override;
  Hdf5TraceSink(const Hdf5TraceSink&) = delete;
  Hdf5TraceSink& operator=(const Hdf5TraceSink&) = delete;

  // throws: ConfigError "output.path: cannot create <path>: <reason>" if the directory or the
  // file cannot be created.
  void begin(const RunHeader& header) override;
  void metrics(const MetricsRow& row, double wall_seconds) override;
  // /epochs/<column>: created at the first row, flushed like /metrics.
  void epoch(const MetricsRow& row) override;
  void event(const EventRecord& record) override;
  void finish(const RunSummary& summary) override;

  const std::string& final_path() const { return final_path_; }
  const std::string& partial_path() const { return partial_path_; }

private:
  void create_metric_sets(const MetricsRow& row);
  void flush_events();
  void close_all() noexcept;
  // Copies the flushed work file to the .partial (atomic rename); unless `force`, only while
  // the file is small or a second after the last copy.
  void checkpoint(bool force);
  // Opens (creating) the work file and locks it for this run; throws if another run holds it.
  int open_locked_work_file() const;
  void release_work_lock() noexcept;

  std::string final_path_;
  std::string partial_path_;
  std::string work_path_;
  std::chrono::steady_clock::time_point last_checkpoint_;
  EventLevel events_;
  // Declared first so that it is destroyed last, after the objects inside it.
  Hdf5Handle file_;
  Hdf5Handle scalar_space_;      // one-element memory space for single-value writes
  Hdf5Handle event_memory_type_; // EventRecord as laid out in memory
  Hdf5Handle event_set_;
  std::vector<std::string> column_names_; // of the first row; every row must match
  std::vector<Hdf5Handle> column_sets_;   // one per column, then /metrics/wall_time_s
  std::vector<EventRecord> event_buffer_;
  std::uint64_t rows_ = 0;
  std::vector<std::string> epoch_names_;
  std::vector<Hdf5Handle> epoch_sets_;
  std::uint64_t epoch_rows_ = 0;
  std::uint64_t events_written_ = 0;
  int work_lock_fd_ = -1; // the work file, open and locked from begin() to finish()
  bool begun_ = false;
  bool finished_ = false;
};

} // namespace dtsim
