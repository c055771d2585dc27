// SPDX-License-Identifier: MIT
// Hdf5TraceSink: full round trip, killed runs, final statuses, event levels, bad paths.
#include "sim/core/errors.hpp"
#include "sim/trace/hdf5_trace_sink.hpp"
#include "sim/trace/trace_reader.hpp"
#include "trace_fixtures.hpp"

#include <cmath>
#include <cstdlib>
#include <doctest/doctest.h>
#include <filesystem>
#include <fstream>
#include <set>
#include <stdexcept>
#include <sys/wait.h>
#include <unistd.h>

using namespace dtsim;
using namespace dtsim::test;
namespace fs = std::filesystem;

namespace {

void check_events(const std::vector<EventRecord>& got, int first, int count) {
  REQUIRE(got.size() == static_cast<std::size_t>(count));
  for (int i = 0; i < count; ++i) {
    const EventRecord want = sample_event(first + i);
    const EventRecord& e = got[static_cast<std::size_t>(i)];
    CAPTURE(i);
    CHECK(e.time_ns == want.time_ns);
    CHECK(e.kind == want.kind);
    CHECK(e.node == want.node);
    CHECK(e.peer == want.peer);
    CHECK(e.staleness == want.staleness);
    CHECK(e.bytes == want.bytes);
  }
}

// The metrics columns of rows [0, rows) as sample_row/sample_wall wrote them.
void check_metrics(const TraceContents& t, int rows) {
  const std::set<std::string> expected = {"sim_time_s", "updates", "test_accuracy", "test_loss",
                                          "wall_time_s"};
  std::set<std::string> names;
  for (const auto& [name, values] : t.metrics)
    names.insert(name);
  CHECK(names == expected);
  for (const auto& [name, values] : t.metrics) {
    const std::string column = name; // a copy: clang 14 cannot capture bindings
    CAPTURE(column);
    REQUIRE(values.size() == static_cast<std::size_t>(rows));
    for (int i = 0; i < rows; ++i) {
      const double want = name == "wall_time_s" ? sample_wall(i) : sample_row(i).get(name);
      const double got = values[static_cast<std::size_t>(i)];
      if (std::isnan(want))
        CHECK(std::isnan(got));
      else
        CHECK(got == want);
    }
  }
}

} // namespace

TEST_SUITE("trace") {
  TEST_CASE("Hdf5TraceSink: a finished trace reads back every value") {
    TempDir dir("roundtrip");
    const std::string path = dir.file("runs/nested/run.h5"); // parents do not exist yet
    constexpr int kRows = 3;
    // More than two event blocks in all, split unevenly around the metrics flushes.
    const int per_row[kRows + 1] = {5000, 4100, 7, 3};
    int events = 0;
    {
      Hdf5TraceSink sink(path, EventLevel::Full);
      sink.begin(sample_header());
      CHECK(fs::exists(path + ".partial"));
      for (int r = 0; r <= kRows; ++r) {
        for (int k = 0; k < per_row[r]; ++k)
          sink.event(sample_event(events++));
        if (r < kRows)
          sink.metrics(sample_row(r), sample_wall(r));
      }
      sink.finish(sample_summary(RunStatus::Completed));
      CHECK(fs::exists(path));
      CHECK_FALSE(fs::exists(path + ".partial"));
    }
    const TraceContents t = read_trace(path);
    const RunHeader h = sample_header();
    CHECK(t.text_attributes.at("name") == h.name);
    CHECK(t.text_attributes.at("scenario") == h.scenario_yaml);
    CHECK(t.text_attributes.at("status") == "completed");
    CHECK(t.text_attributes.at("status_message") == "ended: completed");
    CHECK(t.text_attributes.at("events") == "full");
    CHECK(t.text_attributes.at("dtsim_version") == "0.1.0-test");
    CHECK(t.text_attributes.at("algorithm") == "dsgd");
    const std::string start = t.text_attributes.at("start_time");
    REQUIRE(start.size() == 20); // 2025-01-31T12:34:56Z
    CHECK(start[4] == '-');
    CHECK(start[10] == 'T');
    CHECK(start[19] == 'Z');
    CHECK(t.text_attributes.at("warnings") == "only 2 evaluations\nsecond warning");
    CHECK(t.text_attributes.size() == 9);
    CHECK(t.seed == h.seed);
    CHECK(t.number_attributes.at("schema_version") == 1.0);
    CHECK(t.number_attributes.at("wall_seconds") == 2.5);
    CHECK(t.number_attributes.at("num_params") == 1234.0);
    CHECK(t.number_attributes.at("spectral_gap") == 0.25);
    CHECK(t.number_attributes.at("final_test_accuracy") == 0.875);
    CHECK(t.number_attributes.size() == 6); // + seed
    check_metrics(t, kRows);
    const RunSummary s = sample_summary(RunStatus::Completed);
    CHECK(t.nodes.size() == s.node_columns.size());
    for (const auto& [name, values] : s.node_columns) {
      const std::string column = name; // a copy: clang 14 cannot capture bindings
      CAPTURE(column);
      CHECK(t.nodes.at(name) == values);
    }
    CHECK(t.label_histogram == h.label_histogram);
    CHECK(t.staleness_histogram == s.staleness_histogram);
    CHECK(t.num_events == static_cast<std::size_t>(events));
    check_events(read_events(path), 0, events);
  }

  TEST_CASE("Hdf5TraceSink: a killed run leaves a readable .partial with status running") {
    TempDir dir("killed");
    const std::string path = dir.file("run.h5");
    // The child dies without finish() and without any destructor or atexit handler, as under
    // SIGKILL right after the second evaluation.
    const pid_t child = fork();
    REQUIRE(child >= 0);
    if (child == 0) {
      try {
        Hdf5TraceSink sink(path, EventLevel::Full);
        sink.begin(sample_header());
        for (int i = 0; i < 10; ++i)
          sink.event(sample_event(i));
        sink.metrics(sample_row(0), sample_wall(0));
        sink.metrics(sample_row(1), sample_wall(1));
        sink.event(sample_event(10)); // buffered, never flushed: lost with the process
        _exit(0);
      } catch (...) {
        _exit(1);
      }
    }
    int status = 0;
    REQUIRE(waitpid(child, &status, 0) == child);
    REQUIRE(WIFEXITED(status));
    REQUIRE(WEXITSTATUS(status) == 0);

    CHECK_FALSE(fs::exists(path));
    REQUIRE(fs::exists(path + ".partial"));
    const TraceContents t = read_trace(path + ".partial");
    CHECK(t.text_attributes.at("status") == "running");
    CHECK(t.text_attributes.at("status_message") == "");
    CHECK(t.number_attributes.at("wall_seconds") == sample_wall(1));
    CHECK(t.seed == sample_header().seed);
    check_metrics(t, 2);
    CHECK(t.label_histogram == sample_header().label_histogram);
    CHECK(t.nodes.empty());
    CHECK(t.staleness_histogram.empty());
    check_events(read_events(path + ".partial"), 0, 10);
  }

  TEST_CASE("Hdf5TraceSink: destroyed without finish() keeps the .partial, events included") {
    TempDir dir("destroyed");
    const std::string path = dir.file("run.h5");
    {
      Hdf5TraceSink sink(path, EventLevel::Full);
      sink.begin(sample_header());
      sink.metrics(sample_row(0), sample_wall(0));
      for (int i = 0; i < 3; ++i)
        sink.event(sample_event(i));
    }
    CHECK_FALSE(fs::exists(path));
    const TraceContents t = read_trace(path + ".partial");
    CHECK(t.text_attributes.at("status") == "running");
    check_metrics(t, 1);
    check_events(read_events(path + ".partial"), 0, 3);
  }

  TEST_CASE("Hdf5TraceSink: finish() renames and records every final status") {
    for (RunStatus status :
         {RunStatus::Completed, RunStatus::Diverged, RunStatus::Interrupted, RunStatus::Failed}) {
      CAPTURE(to_string(status));
      TempDir dir(to_string(status));
      const std::string path = dir.file("run.h5");
      { std::ofstream(path) << "stale result of an earlier run"; }
      Hdf5TraceSink sink(path, EventLevel::Summary);
      sink.begin(sample_header());
      sink.metrics(sample_row(0), sample_wall(0));
      sink.finish(sample_summary(status));
      CHECK_FALSE(fs::exists(path + ".partial"));
      const TraceContents t = read_trace(path); // the stale file was replaced
      CHECK(t.text_attributes.at("status") == to_string(status));
      CHECK(t.text_attributes.at("status_message") == std::string("ended: ") + to_string(status));
      check_metrics(t, 1);
    }
  }

  TEST_CASE("Hdf5TraceSink: event levels none and summary write no events") {
    for (EventLevel level : {EventLevel::None, EventLevel::Summary}) {
      CAPTURE(to_string(level));
      TempDir dir(to_string(level));
      const std::string path = dir.file("run.h5");
      Hdf5TraceSink sink(path, level);
      sink.begin(sample_header());
      for (int i = 0; i < 5000; ++i)
        sink.event(sample_event(i));
      sink.metrics(sample_row(0), sample_wall(0));
      sink.finish(sample_summary(RunStatus::Completed));
      const TraceContents t = read_trace(path);
      CHECK(t.text_attributes.at("events") == to_string(level));
      CHECK(t.num_events == 0);
      CHECK(read_events(path).empty());
      CHECK(t.staleness_histogram == sample_summary(RunStatus::Completed).staleness_histogram);
      CHECK(t.nodes.size() == 5);
    }
  }

  TEST_CASE("Hdf5TraceSink: a run without rows, labels or events is still a valid trace") {
    TempDir dir("empty");
    const std::string path = dir.file("run.h5");
    Hdf5TraceSink sink(path, EventLevel::Full);
    RunHeader h;
    h.name = "empty";
    sink.begin(h);
    RunSummary s;
    s.status = RunStatus::Failed;
    s.message = "model: out of memory";
    sink.finish(s);
    const TraceContents t = read_trace(path);
    CHECK(t.text_attributes.at("status") == "failed");
    CHECK(t.metrics.empty());
    CHECK(t.nodes.empty());
    CHECK(t.label_histogram.empty());
    CHECK(t.staleness_histogram.empty());
    CHECK(t.num_events == 0);
  }

  TEST_CASE("Hdf5TraceSink: an uncreatable output path is a ConfigError") {
    TempDir dir("unwritable");
    const std::string blocker = dir.file("blocker");
    { std::ofstream(blocker) << "a file where a directory should be"; }
    SUBCASE("parent directory cannot be created") {
      Hdf5TraceSink sink(blocker + "/sub/run.h5", EventLevel::None);
      std::string message;
      try {
        sink.begin(sample_header());
      } catch (const ConfigError& e) {
        message = e.what();
      }
      CHECK(message.rfind("output.path: cannot create " + blocker, 0) == 0);
    }
    SUBCASE("file cannot be created in a non-directory") {
      Hdf5TraceSink sink(blocker + "/run.h5", EventLevel::None);
      std::string message;
      try {
        sink.begin(sample_header());
      } catch (const ConfigError& e) {
        message = e.what();
      }
      CHECK(message.rfind("output.path: cannot create " + blocker, 0) == 0);
      CHECK(message.find("Not a directory") != std::string::npos);
    }
    SUBCASE("a directory stands where the .work file goes") {
      fs::create_directories(dir.file("run.h5.work"));
      Hdf5TraceSink sink(dir.file("run.h5"), EventLevel::None);
      std::string message;
      try {
        sink.begin(sample_header());
      } catch (const ConfigError& e) {
        message = e.what();
      }
      CHECK(message == "output.path: cannot create " + dir.file("run.h5.work") +
                           " (the file a run writes before it becomes run.h5): Is a directory");
    }
  }

  TEST_CASE("Hdf5TraceSink: a folder or an empty name as the trace's path is refused") {
    TempDir dir("folder");
    std::string message;
    try {
      Hdf5TraceSink(dir.file(""), EventLevel::None).begin(sample_header());
    } catch (const ConfigError& e) {
      message = e.what();
    }
    CHECK(message.find(" is a folder; expected a trace file name") != std::string::npos);
    CHECK_THROWS_WITH_AS(Hdf5TraceSink("", EventLevel::None).begin(sample_header()),
                         "output.path: expected a trace file name, got ''", ConfigError);
  }

  TEST_CASE("Hdf5TraceSink: a second writer of the same path stops before touching the first's") {
    TempDir dir("two-writers");
    Hdf5TraceSink first(dir.file("run.h5"), EventLevel::None);
    first.begin(sample_header());
    first.metrics(sample_row(0), sample_wall(0));
    const auto partial_size = fs::file_size(dir.file("run.h5.partial"));
    {
      Hdf5TraceSink second(dir.file("run.h5"), EventLevel::None);
      CHECK_THROWS_WITH_AS(second.begin(sample_header()),
                           ("trace " + dir.file("run.h5") + ": another run is writing it now (" +
                            dir.file("run.h5.work") +
                            " is locked); give this run another output path")
                               .c_str(),
                           std::runtime_error);
    }
    // The first run's checkpoint and work file are untouched, and it finishes a valid trace.
    CHECK(fs::file_size(dir.file("run.h5.partial")) == partial_size);
    first.metrics(sample_row(1), sample_wall(1));
    first.finish(sample_summary(RunStatus::Completed));
    const TraceContents t = read_trace(dir.file("run.h5"));
    CHECK(t.text_attributes.at("status") == "completed");
    CHECK(t.metrics.at("sim_time_s").size() == 2);
    // Once it is finished, the path is free again.
    Hdf5TraceSink again(dir.file("run.h5"), EventLevel::None);
    CHECK_NOTHROW(again.begin(sample_header()));
  }

  TEST_CASE("Hdf5TraceSink: HDF5's own file locking, turned on from the environment, is harmless") {
    TempDir dir("hdf5-locking");
    ::setenv("HDF5_USE_FILE_LOCKING", "TRUE", 1); // overrides the sink's "off" for its file
    Hdf5TraceSink sink(dir.file("run.h5"), EventLevel::None);
    CHECK_NOTHROW(sink.begin(sample_header()));
    sink.metrics(sample_row(0), sample_wall(0));
    sink.finish(sample_summary(RunStatus::Completed));
    ::unsetenv("HDF5_USE_FILE_LOCKING");
    CHECK(read_trace(dir.file("run.h5")).text_attributes.at("status") == "completed");
  }

  TEST_CASE("Hdf5TraceSink: rows with another column set are an internal error") {
    TempDir dir("columns");
    Hdf5TraceSink sink(dir.file("run.h5"), EventLevel::None);
    sink.begin(sample_header());
    sink.metrics(sample_row(0), sample_wall(0));
    MetricsRow fewer = sample_row(1);
    fewer.columns.pop_back();
    CHECK_THROWS_AS(sink.metrics(fewer, 1.0), std::logic_error);
    MetricsRow renamed = sample_row(1);
    renamed.columns[2].first = "test_acc";
    CHECK_THROWS_AS(sink.metrics(renamed, 1.0), std::logic_error);
    MetricsRow reserved;
    reserved.columns = {{"wall_time_s", 1.0}};
    Hdf5TraceSink other(dir.file("other.h5"), EventLevel::None);
    other.begin(sample_header());
    CHECK_THROWS_AS(other.metrics(reserved, 1.0), std::logic_error);
    MetricsRow twice = sample_row(0);
    twice.columns.push_back(twice.columns.front());
    CHECK_THROWS_AS(other.metrics(twice, 1.0), std::logic_error);
    other.metrics(sample_row(0), sample_wall(0)); // the rejected first rows left nothing behind
    other.finish(sample_summary(RunStatus::Completed));
    check_metrics(read_trace(dir.file("other.h5")), 1);
    sink.metrics(sample_row(1), sample_wall(1));
    sink.finish(sample_summary(RunStatus::Completed));
    check_metrics(read_trace(dir.file("run.h5")), 2);
  }
}
