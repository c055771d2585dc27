// SPDX-License-Identifier: MIT
// MemoryTraceSink: keeps a run's records in memory, for engine tests and determinism checks.
#pragma once

#include "sim/engine/trace_sink.hpp"

#include <cstdint>
#include <vector>

namespace dtsim {

// Stores the header, every metrics row (with its wall seconds, kept apart), every event and
// the summary. Checks the TraceSink contract like Hdf5TraceSink does (call order, every row
// with the first row's columns) so that engine tests catch what the file sink would reject.
class MemoryTraceSink : public TraceSink {
public:
  void begin(const RunHeader& header) override;
  void metrics(const MetricsRow& row, double wall_seconds) override;
  void epoch(const MetricsRow& row) override;
  void event(const EventRecord& record) override;
  void finish(const RunSummary& summary) override;

  bool begun() const { return begun_; }
  bool finished() const { return finished_; }
  const RunHeader& header() const { return header_; }
  const std::vector<MetricsRow>& rows() const { return rows_; }
  const std::vector<MetricsRow>& epoch_rows() const { return epoch_rows_; }
  const std::vector<double>& row_wall_seconds() const { return row_wall_seconds_; }
  const std::vector<EventRecord>& events() const { return events_; }
  const RunSummary& summary() const { return summary_; } // default-constructed until finish()

  // 64-bit FNV-1a over everything recorded except wall-clock time (the rows' wall seconds,
  // summary.wall_seconds and every attribute named *wall_seconds), doubles by bit pattern.
  // Two runs of one scenario and seed must give the same digest whatever the thread count.
  std::uint64_t digest() const;

private:
  RunHeader header_;
  std::vector<MetricsRow> rows_;
  std::vector<MetricsRow> epoch_rows_;
  std::vector<double> row_wall_seconds_;
  std::vector<EventRecord> events_;
  RunSummary summary_;
  bool begun_ = false;
  bool finished_ = false;
};

} // namespace dtsim
