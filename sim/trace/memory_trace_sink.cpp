// SPDX-License-Identifier: MIT
// MemoryTraceSink: contract checks and the wall-clock-free digest.
#include "sim/trace/memory_trace_sink.hpp"

#include "sim/core/errors.hpp"

#include <bit>
#include <string>

namespace dtsim {

namespace {

// FNV-1a, 64 bit; fed field by field so that struct padding never enters the hash.
class Fnv1a {
public:
  void bytes(const void* data, std::size_t size) {
    const auto* p = static_cast<const unsigned char*>(data);
    for (std::size_t i = 0; i < size; ++i) {
      hash_ ^= p[i];
      hash_ *= 1099511628211ULL;
    }
  }
  void u64(std::uint64_t v) { bytes(&v, sizeof v); }
  void i64(std::int64_t v) { u64(static_cast<std::uint64_t>(v)); }
  void f64(double v) { u64(std::bit_cast<std::uint64_t>(v)); }
  void text(const std::string& s) { // length first: "ab","c" differs from "a","bc"
    u64(s.size());
    bytes(s.data(), s.size());
  }
  std::uint64_t value() const { return hash_; }

private:
  std::uint64_t hash_ = 14695981039346656037ULL;
};

// Attributes by name and bits, but those of wall-clock time (set-up, backend and evaluation
// seconds, ...), which differ between two runs of the same bits.
void hash_numbers(Fnv1a& h, const std::vector<std::pair<std::string, double>>& attributes) {
  for (const auto& [k, v] : attributes)
    if (!k.ends_with("wall_seconds")) {
      h.text(k);
      h.f64(v);
    }
}

} // namespace

void MemoryTraceSink::begin(const RunHeader& header) {
  DTSIM_ASSERT(!begun_, "MemoryTraceSink::begin() called twice");
  header_ = header;
  begun_ = true;
}

void MemoryTraceSink::metrics(const MetricsRow& row, double wall_seconds) {
  DTSIM_ASSERT(begun_ && !finished_, "MemoryTraceSink::metrics() outside begin()..finish()");
  if (!rows_.empty()) {
    const MetricsRow& first = rows_.front();
    DTSIM_ASSERT(row.columns.size() == first.columns.size(),
                 "metrics row has a different number of columns than the first row");
    for (std::size_t i = 0; i < row.columns.size(); ++i)
      DTSIM_ASSERT(row.columns[i].first == first.columns[i].first,
                   "metrics column '" + row.columns[i].first + "' where the first row had '" +
                       first.columns[i].first + "'");
  }
  rows_.push_back(row);
  row_wall_seconds_.push_back(wall_seconds);
}

void MemoryTraceSink::epoch(const MetricsRow& row) {
  DTSIM_ASSERT(begun_ && !finished_, "MemoryTraceSink::epoch() outside begin()..finish()");
  if (!epoch_rows_.empty()) {
    const MetricsRow& first = epoch_rows_.front();
    DTSIM_ASSERT(row.columns.size() == first.columns.size(),
                 "epoch row has a different number of columns than the first row");
    for (std::size_t i = 0; i < row.columns.size(); ++i)
      DTSIM_ASSERT(row.columns[i].first == first.columns[i].first,
                   "epoch column '" + row.columns[i].first + "' where the first row had '" +
                       first.columns[i].first + "'");
  }
  epoch_rows_.push_back(row);
}

void MemoryTraceSink::event(const EventRecord& record) {
  DTSIM_ASSERT(begun_ && !finished_, "MemoryTraceSink::event() outside begin()..finish()");
  events_.push_back(record);
}

void MemoryTraceSink::finish(const RunSummary& summary) {
  DTSIM_ASSERT(begun_ && !finished_, "MemoryTraceSink::finish() without begin() or twice");
  DTSIM_ASSERT(summary.status != RunStatus::Running, "finish() needs the final status");
  summary_ = summary;
  finished_ = true;
}

std::uint64_t MemoryTraceSink::digest() const {
  Fnv1a h;
  h.text(header_.name);
  h.text(header_.scenario_yaml);
  h.u64(header_.seed);
  h.u64(header_.text_attributes.size());
  for (const auto& [k, v] : header_.text_attributes) {
    h.text(k);
    h.text(v);
  }
  hash_numbers(h, header_.number_attributes);
  h.u64(header_.label_histogram.size());
  for (const auto& row : header_.label_histogram) {
    h.u64(row.size());
    for (std::int64_t c : row)
      h.i64(c);
  }
  h.u64(rows_.size());
  for (const MetricsRow& row : rows_) {
    h.u64(row.columns.size());
    for (const auto& [k, v] : row.columns) {
      h.text(k);
      h.f64(v);
    }
  }
  // Per-epoch rows, except probe_wall_s (wall clock); absent rows leave older digests alone.
  if (!epoch_rows_.empty()) {
    h.u64(epoch_rows_.size());
    for (const MetricsRow& row : epoch_rows_)
      for (const auto& [k, v] : row.columns)
        if (k != "probe_wall_s") {
          h.text(k);
          h.f64(v);
        }
  }
  h.u64(events_.size());
  for (const EventRecord& e : events_) {
    h.i64(e.time_ns);
    h.i64(e.kind);
    h.i64(e.node);
    h.i64(e.peer);
    h.i64(e.staleness);
    h.i64(e.bytes);
  }
  h.u64(finished_ ? 1 : 0);
  h.text(to_string(summary_.status));
  h.text(summary_.message);
  h.u64(summary_.node_columns.size());
  for (const auto& [k, values] : summary_.node_columns) {
    h.text(k);
    h.u64(values.size());
    for (double v : values)
      h.f64(v);
  }
  h.u64(summary_.staleness_histogram.size());
  for (std::int64_t c : summary_.staleness_histogram)
    h.i64(c);
  hash_numbers(h, summary_.number_attributes);
  return h.value();
}

} // namespace dtsim
