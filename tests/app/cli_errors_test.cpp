// SPDX-License-Identifier: MIT
// The command line's own mistakes: option values, output paths and names give exit code 2 and
// one line naming the option or key, before anything runs.
#include "run_cli.hpp"

#include <cstdlib>
#include <doctest/doctest.h>
#include <filesystem>
#include <string>

using dtsim::testing::run_cli;

namespace {

std::string temp_dir() {
  return dtsim::testing::process_temp_dir("dtsim_cli_errors_test_");
}

const char* kTiny = R"(name: tiny
nodes: 4
data:
  dataset: synthetic
  synthetic: {features: 6, classes: 3, train: 120, test: 30}
  batch_size: 8
model: {kind: softmax}
algorithm: {name: dsgd, lr: 0.1}
stop: {steps: 2}
)";

// The error line of a command that must fail with exit code 2 (the whole output if it did not).
std::string config_error(const std::string& args) {
  const auto r = run_cli(args);
  CHECK_MESSAGE(r.exit_code == 2, args);
  return r.output;
}

bool says(const std::string& output, const std::string& line) {
  return output == line + "\n";
}

} // namespace

TEST_SUITE("app") {
  TEST_CASE("dtsim: numeric option values must be whole numbers in range, all of the value") {
    const std::string tiny = dtsim::testing::write_temp_file(temp_dir(), "tiny.yaml", kTiny);
    CHECK(says(config_error("run " + tiny + " --threads 1.5 -q"),
               "error: --threads: expected an integer in [1, 1024], got '1.5'"));
    CHECK(says(config_error("run " + tiny + " --threads 2x -q"),
               "error: --threads: expected an integer in [1, 1024], got '2x'"));
    CHECK(says(config_error("topology ring --nodes 4.7"),
               "error: --nodes: expected an integer in [1, 1000000], got '4.7'"));
    CHECK(says(config_error("topology ring --nodes 4 --seed abc"),
               "error: --seed: expected an integer in [0, 9223372036854775807], got 'abc'"));
    CHECK(says(config_error("topology ring --nodes 4 --seed -1"),
               "error: --seed: expected an integer in [0, 9223372036854775807], got '-1'"));
    CHECK(says(config_error("analyze " + temp_dir() + " --target abc"),
               "error: --target: expected an accuracy in [0, 1], got 'abc'"));
    CHECK(says(config_error("analyze " + temp_dir() + " --target 5"),
               "error: --target: expected an accuracy in [0, 1], got '5'"));
    CHECK(says(config_error("report " + temp_dir() + " --target xyz"),
               "error: --target: expected an accuracy in [0, 1], got 'xyz'"));
  }

  TEST_CASE("dtsim: an unknown command is one line with a suggestion") {
    CHECK(says(config_error("runn x.yaml"),
               "error: unknown command 'runn' (did you mean 'run'?); see dtsim --help"));
  }

  TEST_CASE("dtsim: a folder given as a scenario or sweep file is named as one") {
    CHECK(says(config_error("run " + temp_dir()),
               "error: " + temp_dir() + ": is a folder; expected a YAML file"));
    CHECK(says(config_error("sweep " + temp_dir()),
               "error: " + temp_dir() + ": is a folder; expected a YAML file"));
  }

  TEST_CASE("dtsim: a folder where a data or output file is expected is named as one") {
    const std::string dir = temp_dir();
    const std::string tiny = dtsim::testing::write_temp_file(dir, "tiny.yaml", kTiny);
    CHECK(says(config_error("analyze " + dir + " --csv " + dir),
               "error: --csv: " + dir + " is a folder; expected a CSV file name"));
    CHECK(says(config_error("validate " + tiny +
                            " --set 'system.compute={dist: trace, file: " + dir + "}'"),
               "error: --set system.compute.file: cannot open compute-time trace " + dir +
                   " (CSV rows 'node,seconds')"));
  }

  TEST_CASE("dtsim topology: the kind is given once, as the argument") {
    CHECK(config_error("topology rnig --nodes 4")
              .find("error: topology: kind: unknown name 'rnig' (did you mean 'ring'?)") == 0);
    CHECK(says(config_error("topology ring star --nodes 4"),
               "error: topology: more than one kind given ('ring', 'star')"));
    CHECK(says(config_error("topology ring --nodes 4 --set kind=star"),
               "error: --set kind: the kind is the command's argument (dtsim topology star "
               "--nodes N)"));
  }

  TEST_CASE("dtsim run: a folder, an empty path or a path-like name is refused before the run") {
    const std::string dir = temp_dir();
    const std::string tiny = dtsim::testing::write_temp_file(dir, "tiny.yaml", kTiny);
    const std::string folder = dir + "/a-folder";
    std::filesystem::create_directories(folder);
    CHECK(config_error("run " + tiny + " -q -o " + folder)
              .find("error: output.path: " + folder + " is a folder; expected a trace file name") !=
          std::string::npos);
    CHECK(says(config_error("validate " + tiny + " --set output.path=" + folder),
               "error: --set output.path: " + folder + " is a folder; expected a trace file name"));
    CHECK(says(config_error("validate " + tiny + " --set 'output.path=\"\"'"),
               "error: --set output.path: expected a trace file name, got ''"));
    CHECK(says(config_error("validate " + tiny + " --set name=../escaped"),
               "error: --set name: expected a name usable as a file name (no '/', not empty, "
               "not starting with '.'), got '../escaped'"));
    CHECK(config_error("validate " + tiny + " --set name=" + std::string(300, 'n'))
              .find("name: expected at most 240 characters, got 300") != std::string::npos);
    CHECK_FALSE(std::filesystem::exists(folder + ".work"));
    // -o '' would otherwise mean "the default path", which nobody types on purpose.
    CHECK(says(config_error("run " + tiny + " -q -o ''"),
               "error: -o: expected a trace file name, got ''"));
    CHECK(says(config_error("sweep scenarios/sweeps/nodes.yaml -o ''"),
               "error: -o: expected an output folder, got ''"));
  }

  TEST_CASE("dtsim: a key with no value is an error, not its default") {
    const std::string dir = temp_dir();
    const std::string tiny = dtsim::testing::write_temp_file(dir, "tiny.yaml", kTiny);
    CHECK(says(config_error("validate " + tiny + " --set algorithm.lr="),
               "error: --set algorithm.lr: empty value; give one"));
    const std::string file = dtsim::testing::write_temp_file(
        dir, "null-nodes.yaml",
        std::string(kTiny).replace(std::string(kTiny).find("nodes: 4"), 8, "nodes:"));
    CHECK(says(config_error("validate " + file),
               "error: " + file +
                   ":2: nodes: empty value; give one, or leave the key out for its default"));
  }

  TEST_CASE("dtsim sweep: a bad value in a point names the sweep file's line and the point") {
    const std::string dir = temp_dir();
    dtsim::testing::write_temp_file(dir, "base.yaml", kTiny);
    const std::string sweep = dtsim::testing::write_temp_file(
        dir, "bad-point.yaml", "name: bad\nbase: base.yaml\ngrid:\n  nodes: [2, 0]\n");
    CHECK(config_error("sweep " + sweep + " --dry-run")
              .find("\nerror: " + sweep +
                    ":4: grid.nodes[1] (point nodes=0): expected a number in [1, 1000000], got "
                    "0\n") != std::string::npos);
  }

  TEST_CASE("dtsim sweep: tuning errors found after reading the file still name its line") {
    const std::string dir = temp_dir();
    dtsim::testing::write_temp_file(dir, "base.yaml", kTiny);
    const std::string tune = "name: t\nbase: base.yaml\ngrid: {seed: [1]}\ntune:\n  key: "
                             "algorithm.lr\n  values: [0.05, 0.1]\n";
    const std::string criterion = dtsim::testing::write_temp_file(
        dir, "criterion.yaml", tune + "  seeds: [7]\n  criterion: final_accuracy\n");
    CHECK(says(config_error("sweep " + criterion + " --dry-run"),
               "error: " + criterion + ":8: tune.criterion: unknown measure 'final_accuracy'"));
    const std::string seeds =
        dtsim::testing::write_temp_file(dir, "seeds.yaml", tune + "  seeds: [1]\n");
    CHECK(says(config_error("sweep " + seeds + " --dry-run"),
               "error: " + seeds +
                   ":7: tune.seeds: seed 1 is also an evaluation seed; tuning seeds must be "
                   "disjoint from the points' seeds"));
  }

  TEST_CASE("dtsim sweep and report: output folders that cannot be made are one-line errors") {
    const std::string dir = temp_dir();
    const std::string blocker = dtsim::testing::write_temp_file(dir, "blocker", "a file");
    CHECK(config_error("sweep scenarios/sweeps/nodes.yaml -o " + blocker + "/out")
              .find("\nerror: -o: cannot create " + blocker + "/out: Not a directory\n") !=
          std::string::npos); // after the sweep's one-line summary
    const std::string empty = dir + "/empty-sweep";
    std::filesystem::create_directories(empty);
    CHECK(says(config_error("report " + empty), "error: report: no traces (*.h5) in " + empty));
    CHECK(says(config_error("report " + empty + " -o " + dir),
               "error: -o: " + dir + " is a folder; expected the report's file name (e.g. " + dir +
                   "/report.md)"));
  }

  TEST_CASE("dtsim report: a plot script that is not there is one line naming where it looked") {
    const std::string dir = temp_dir() + "/plotless";
    std::filesystem::create_directories(dir);
    const std::string tiny = dtsim::testing::write_temp_file(dir, "tiny.yaml", kTiny);
    REQUIRE(run_cli("run " + tiny + " -q -o " + dir + "/runs/t.h5").exit_code == 0);
    const std::string missing = dir + "/no-such-plot.py";
    ::setenv("DTSIM_PLOT_PY", missing.c_str(), 1);
    const std::string out = config_error("report " + dir + "/runs");
    ::unsetenv("DTSIM_PLOT_PY");
    CHECK(says(out, "error: report: analysis/plot.py not found (looked at " + missing +
                        "); set DTSIM_PLOT_PY to its path"));
  }
}
