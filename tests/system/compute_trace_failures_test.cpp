// SPDX-License-Identifier: MIT
// ComputeTimeModel: replayed compute-time traces and outage windows, with their errors.
#include "sim/core/errors.hpp"
#include "sim/scenario/yaml_tree.hpp"
#include "sim/system/compute_time_model.hpp"

#include <doctest/doctest.h>
#include <filesystem>
#include <fstream>
#include <unistd.h>

using namespace dtsim;

namespace {

Params yaml(const std::string& text) {
  return Params(parse_yaml_text(text, "s.yaml"), "s.yaml");
}

// A file per call: tests read some of them again later.
std::string trace_file(const std::string& text) {
  static int count = 0;
  const auto path =
      std::filesystem::temp_directory_path() /
      ("dtsim_compute_trace_" + std::to_string(getpid()) + "_" + std::to_string(count++) + ".csv");
  std::ofstream(path) << text;
  return path.string();
}

std::string error_of(const std::string& text, int nodes) {
  try {
    ComputeTimeModel(yaml(text), nodes, 1);
  } catch (const ConfigError& e) {
    return e.what();
  }
  return "";
}

} // namespace

TEST_SUITE("system") {
  TEST_CASE("ComputeTimeModel: a trace is replayed per node in file order, cycling") {
    const std::string f = trace_file("node,seconds\n0,0.5\n1,2\n# a comment\n0,1.5\n");
    ComputeTimeModel m(yaml("dist: trace\nfile: " + f + "\n"), 2, 1);
    CHECK(m.mean_seconds() == doctest::Approx(4.0 / 3.0));
    CHECK(m.sample(0).seconds() == doctest::Approx(0.5));
    CHECK(m.sample(0).seconds() == doctest::Approx(1.5));
    CHECK(m.sample(0).seconds() == doctest::Approx(0.5)); // cycles
    CHECK(m.sample(1).seconds() == doctest::Approx(2.0));
    CHECK(m.sample(1).seconds() == doctest::Approx(2.0));
  }

  TEST_CASE("ComputeTimeModel: trace errors name the file and line") {
    const std::string bad = trace_file("0,0.5\n1,x\n");
    CHECK(error_of("dist: trace\nfile: " + bad + "\n", 2) ==
          "s.yaml:2: file: " + bad + ":2: expected 'node,seconds', got '1,x'");
    // A broken first row is an error, not a header: only two non-numeric fields are one.
    const std::string first = trace_file("0;0.5\n1,2\n");
    CHECK(error_of("dist: trace\nfile: " + first + "\n", 2) ==
          "s.yaml:2: file: " + first + ":1: expected 'node,seconds', got '0;0.5'");
    const std::string half = trace_file("0,abc\n1,2\n");
    CHECK(error_of("dist: trace\nfile: " + half + "\n", 2).find(":1: expected 'node,seconds'") !=
          std::string::npos);
    const std::string range = trace_file("0,0.5\n3,1\n");
    CHECK(
        error_of("dist: trace\nfile: " + range + "\n", 2).find(":2: node 3 out of range [0, 1]") !=
        std::string::npos);
    const std::string missing = trace_file("0,0.5\n");
    CHECK(error_of("dist: trace\nfile: " + missing + "\n", 2).find("no durations for node 1") !=
          std::string::npos);
    const std::string negative = trace_file("0,-1\n");
    CHECK(error_of("dist: trace\nfile: " + negative + "\n", 1).find("expected seconds > 0") !=
          std::string::npos);
    CHECK(error_of("dist: trace\nfile: /nonexistent/t.csv\n", 1) ==
          "s.yaml:2: file: cannot open compute-time trace /nonexistent/t.csv (CSV rows "
          "'node,seconds')");
    // A mean is meaningless for a trace: mean_s is an unknown key there.
    const Params p = yaml("dist: trace\nfile: " + missing + "\nmean_s: 1\n");
    ComputeTimeModel(p, 1, 1);
    CHECK_THROWS_AS(p.reject_unused(), ConfigError);
  }

  TEST_CASE("ComputeTimeModel: an outage freezes the gradient under way and delays new ones") {
    ComputeTimeModel m(yaml("mean_s: 1\nfailures:\n  - {node: 0, from_s: 10, to_s: 15}\n"
                            "  - {node: 0, from_s: 14, to_s: 16}\n  - {node: 0, from_s: 20, "
                            "to_s: 21}\n"),
                       2, 1);
    const auto at = [&](int node, double start) {
      return m.sample(node, SimTime::from_seconds(start)).seconds();
    };
    CHECK(at(0, 2.0) == doctest::Approx(1.0));  // before any outage
    CHECK(at(0, 9.5) == doctest::Approx(7.0));  // 0.5 s, frozen 10..16 (merged), 0.5 s
    CHECK(at(0, 12.0) == doctest::Approx(5.0)); // starts down: waits to 16, then 1 s
    CHECK(at(0, 19.5) == doctest::Approx(2.0)); // 0.5 + 1 frozen + 0.5
    CHECK(at(0, 16.0) == doctest::Approx(1.0)); // the window is [from, to)
    CHECK(at(1, 10.0) == doctest::Approx(1.0)); // other nodes unaffected
  }

  TEST_CASE("ComputeTimeModel: bad outage windows are one-line errors at their line") {
    CHECK(error_of("failures:\n  - {node: 3, from_s: 1, to_s: 2}\n", 2) ==
          "s.yaml:2: failures[0].node: expected a number in [0, 1], got 3");
    CHECK(error_of("failures:\n  - {node: 0, from_s: 5, to_s: 2}\n", 2)
              .find("s.yaml:2: failures[0].to_s: expected to_s > from_s = 5, got 2") == 0);
    CHECK(error_of("failures: {node: 0}\n", 2).find("failures: expected a list of maps") !=
          std::string::npos);
    const Params p = yaml("failures:\n  - {node: 0, from_s: 1, to_s: 2, until: 3}\n");
    ComputeTimeModel(p, 1, 1);
    std::string unknown;
    try {
      p.reject_unused();
    } catch (const ConfigError& e) {
      unknown = e.what();
    }
    CHECK(unknown.find("failures[0].until: unknown key 'until'") != std::string::npos);
  }
}
