// SPDX-License-Identifier: MIT
// MemoryTraceSink: keeps every record, checks the call order, digest ignores wall-clock time.
#include "sim/trace/memory_trace_sink.hpp"
#include "trace_fixtures.hpp"

#include <cmath>
#include <doctest/doctest.h>
#include <stdexcept>

using namespace dtsim;
using namespace dtsim::test;

namespace {

// One small run; `wall_offset` shifts every wall-clock figure, `tweak` perturbs one record.
void feed(MemoryTraceSink& sink, double wall_offset, int tweak) {
  RunHeader header = sample_header();
  header.number_attributes.emplace_back("setup_wall_seconds", 0.5 + wall_offset);
  header.number_attributes.emplace_back("nodes", tweak == 4 ? 5 : 4);
  sink.begin(header);
  for (int i = 0; i < 3; ++i) {
    sink.event(sample_event(i));
    MetricsRow row = sample_row(i);
    if (tweak == 1 && i == 2)
      row.columns[2].second = std::nextafter(row.columns[2].second, 1.0);
    sink.metrics(row, sample_wall(i) + wall_offset);
  }
  EventRecord last = sample_event(3);
  if (tweak == 2)
    last.peer += 1;
  sink.event(last);
  RunSummary s = sample_summary(RunStatus::Completed);
  s.wall_seconds += wall_offset;
  s.number_attributes.emplace_back("gradient_wall_seconds", 1.5 + wall_offset);
  if (tweak == 3)
    s.status = RunStatus::Diverged;
  sink.finish(s);
}

} // namespace

TEST_SUITE("trace") {
  TEST_CASE("MemoryTraceSink: keeps header, rows, events and summary") {
    MemoryTraceSink sink;
    CHECK_FALSE(sink.begun());
    feed(sink, 0.0, 0);
    CHECK(sink.finished());
    CHECK(sink.header().seed == sample_header().seed);
    CHECK(sink.header().label_histogram == sample_header().label_histogram);
    REQUIRE(sink.rows().size() == 3);
    CHECK(sink.rows()[2].get("updates") == 20.0);
    CHECK(std::isnan(sink.rows()[1].get("test_loss")));
    CHECK(sink.row_wall_seconds() == std::vector<double>{0.125, 0.25, 0.375});
    REQUIRE(sink.events().size() == 4);
    CHECK(sink.events()[3].time_ns == sample_event(3).time_ns);
    CHECK(sink.summary().staleness_histogram == std::vector<std::int64_t>{5, 4, 3, 2, 1});
  }

  TEST_CASE("MemoryTraceSink: digest ignores wall-clock time and sees every record") {
    MemoryTraceSink a, b;
    feed(a, 0.0, 0);
    feed(b, 17.0, 0);
    CHECK(a.digest() == b.digest());
    for (int tweak = 1; tweak <= 4; ++tweak) {
      CAPTURE(tweak);
      MemoryTraceSink c;
      feed(c, 0.0, tweak);
      CHECK(c.digest() != a.digest());
    }
    MemoryTraceSink unfinished;
    unfinished.begin(sample_header());
    CHECK(unfinished.digest() != a.digest());
  }

  TEST_CASE("MemoryTraceSink: calls out of order are internal errors") {
    MemoryTraceSink sink;
    CHECK_THROWS_AS(sink.metrics(sample_row(0), 0.0), std::logic_error);
    sink.begin(sample_header());
    CHECK_THROWS_AS(sink.begin(sample_header()), std::logic_error);
    sink.metrics(sample_row(0), 0.0);
    MetricsRow other = sample_row(1);
    other.columns.pop_back();
    CHECK_THROWS_AS(sink.metrics(other, 0.0), std::logic_error);
    RunSummary running;
    running.status = RunStatus::Running;
    CHECK_THROWS_AS(sink.finish(running), std::logic_error);
    sink.finish(sample_summary(RunStatus::Completed));
    CHECK_THROWS_AS(sink.finish(sample_summary(RunStatus::Completed)), std::logic_error);
    CHECK_THROWS_AS(sink.event(sample_event(0)), std::logic_error);
  }
}
