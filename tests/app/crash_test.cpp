// SPDX-License-Identifier: MIT
// Crash safety of the real binary: runs and sweeps SIGKILLed at seeded random moments leave
// readable, consistent traces, and a resumed sweep ends with every point exactly once.
#include "run_cli.hpp"
#include "sim/trace/trace_reader.hpp"

#include <algorithm>
#include <chrono>
#include <csignal>
#include <doctest/doctest.h>
#include <filesystem>
#include <fstream>
#include <map>
#include <random>
#include <sstream>
#include <string>
#include <sys/wait.h>
#include <thread>
#include <unistd.h>
#include <vector>

using namespace dtsim;
namespace fs = std::filesystem;

namespace {

// A run of about 0.1-0.3 s (its duration is measured before the kills).
const char* kScenario = R"(name: crash
seed: 3
nodes: 6
data:
  dataset: synthetic
  synthetic: {features: 12, classes: 3, train: 1200, test: 300}
  batch_size: 8
model: {kind: mlp, hidden: [16]}
topology: {kind: ring}
algorithm: {name: dsgd, mode: async, lr: 0.1}
system: {compute: {dist: exponential, mean_s: 0.01}}
stop: {epochs: 3}
eval: {every_s: 0.01}
)";

// Starts DTSIM_BINARY with `args` (output discarded), waits `delay`, SIGKILLs it if it is
// still running. Returns true if the kill happened before the process ended on its own.
bool run_and_kill(const std::vector<std::string>& args, std::chrono::milliseconds delay) {
  std::fflush(stdout); // or the child would print this process's buffered output again
  std::fflush(stderr);
  const pid_t child = fork();
  REQUIRE(child >= 0);
  if (child == 0) {
    std::vector<char*> argv;
    std::string binary = DTSIM_BINARY;
    argv.push_back(binary.data());
    std::vector<std::string> copy = args;
    for (std::string& a : copy)
      argv.push_back(a.data());
    argv.push_back(nullptr);
    std::freopen("/dev/null", "w", stdout);
    std::freopen("/dev/null", "w", stderr);
    execv(DTSIM_BINARY, argv.data());
    _exit(127);
  }
  std::this_thread::sleep_for(delay);
  const bool killed = kill(child, SIGKILL) == 0;
  int status = 0;
  waitpid(child, &status, 0);
  return killed && WIFSIGNALED(status);
}

// Every /metrics column has the same number of rows; the status fits the file name.
void check_trace(const std::string& path, bool partial) {
  CAPTURE(path);
  const TraceContents t = read_trace(path);
  // Killed before the first row: no columns yet, a consistent state too.
  const std::size_t rows = t.metrics.empty() ? 0 : t.metrics.begin()->second.size();
  for (const auto& [name, values] : t.metrics) {
    const std::string column = name; // a copy: clang 14 cannot capture bindings
    CAPTURE(column);
    CHECK(values.size() == rows);
  }
  const std::string status = t.text_attributes.at("status");
  if (partial)
    CHECK(status == "running");
  else
    CHECK(status == "completed");
}

} // namespace

TEST_SUITE("crash") {
  TEST_CASE("runs SIGKILLed at random moments leave a readable, consistent trace or none") {
    const std::string dir = testing::process_temp_dir("dtsim_crash_run_");
    const std::string scenario = testing::write_temp_file(dir, "crash.yaml", kScenario);
    // Kill moments spread over one whole run's duration, measured here (machines differ).
    const auto t0 = std::chrono::steady_clock::now();
    REQUIRE(testing::run_cli("run " + scenario + " -o " + dir + "/timed.h5 --quiet").exit_code ==
            0);
    const auto run_ms =
        std::chrono::duration_cast<std::chrono::milliseconds>(std::chrono::steady_clock::now() - t0)
            .count();
    std::mt19937 rng(20261125);
    std::uniform_int_distribution<int> delay_ms(0, static_cast<int>(run_ms));
    int killed = 0, partials = 0, finished = 0, runs = 0;
    // 30 runs, more (up to 120) while fewer than 8 were caught in flight: on a loaded machine
    // the start-up before the trace exists and the run itself take longer than when timed, so
    // that more kills find no file yet or a finished run.
    for (int k = 0; k < 120 && (k < 30 || partials < 8); ++k, ++runs) {
      const std::string out = dir + "/run" + std::to_string(k) + ".h5";
      killed += run_and_kill({"run", scenario, "-o", out, "--quiet"},
                             std::chrono::milliseconds(delay_ms(rng)));
      if (fs::exists(out + ".partial")) {
        check_trace(out + ".partial", true);
        ++partials;
      }
      if (fs::exists(out)) {
        check_trace(out, false);
        ++finished;
      }
    }
    MESSAGE(runs << " runs of " << run_ms << " ms: " << killed << " killed, " << partials
                 << " left a .partial, " << finished << " finished");
    // The window must have caught runs in flight, or the test tests nothing.
    CHECK(partials >= 5);
  }

  TEST_CASE("a sweep SIGKILLed at random moments and resumed has every point exactly once") {
    const std::string dir = testing::process_temp_dir("dtsim_crash_sweep_");
    fs::remove_all(dir + "/out");
    testing::write_temp_file(dir, "base.yaml", kScenario);
    const std::string sweep = testing::write_temp_file(
        dir, "sweep.yaml",
        "name: crashsweep\nbase: base.yaml\noutput: out\ngrid:\n  seed: [1, 2, 3, "
        "4, 5, 6]\n  algorithm.mode: [sync, async]\n");
    std::mt19937 rng(7);
    std::uniform_int_distribution<int> delay_ms(50, 600);
    int kills = 0;
    for (int k = 0; k < 6; ++k)
      kills += run_and_kill({"sweep", sweep, "--resume", "--jobs", "2"},
                            std::chrono::milliseconds(delay_ms(rng)));
    const auto done = testing::run_cli("sweep " + sweep + " --resume --jobs 2");
    CHECK(done.exit_code == 0);
    MESSAGE(kills << " of 6 sweep attempts killed; then: " << done.output.substr(0, 200));
    CHECK(kills >= 2);
    // index.csv: a header and each of the 12 points exactly once, each with its trace.
    std::ifstream index(dir + "/out/index.csv");
    std::string line;
    std::getline(index, line);
    std::map<std::string, int> seen;
    while (std::getline(index, line))
      ++seen[line.substr(0, line.find(','))];
    CHECK(seen.size() == 12);
    for (const auto& [point, count] : seen) {
      const std::string point_name = point; // a copy: clang 14 cannot capture bindings
      CAPTURE(point_name);
      CHECK(count == 1);
      check_trace(dir + "/out/" + point + ".h5", false);
    }
    for (const auto& entry : fs::directory_iterator(dir + "/out"))
      CHECK(entry.path().extension() != ".partial");
  }

  TEST_CASE("a resumed sweep reruns a damaged trace and drops a checkpoint beside a finished one") {
    const std::string dir = testing::process_temp_dir("dtsim_crash_leftovers_");
    const std::string out = dir + "/out,1"; // a comma in the folder: index.csv must quote it
    fs::remove_all(out);
    testing::write_temp_file(dir, "base.yaml", kScenario);
    const std::string sweep =
        testing::write_temp_file(dir, "sweep.yaml",
                                 "name: leftovers\nbase: base.yaml\noutput: out,1\nset: "
                                 "{stop.epochs: 0.5}\ngrid:\n  seed: [1, 2]\n  label: "
                                 "['D-PSGD \"async\", m=0']\n");
    REQUIRE(testing::run_cli("sweep " + sweep).exit_code == 0);
    std::vector<std::string> traces;
    for (const auto& e : fs::directory_iterator(out))
      if (e.path().extension() == ".h5")
        traces.push_back(e.path().string());
    std::sort(traces.begin(), traces.end());
    REQUIRE(traces.size() == 2);

    // A kill between renaming the work file to the trace and removing the last checkpoint
    // leaves both: analysis counts the run once, and a resume removes the checkpoint.
    fs::copy_file(traces[1], traces[1] + ".partial");
    const auto table = testing::run_cli("analyze " + out + " --csv " + dir + "/runs.csv -q");
    REQUIRE(table.exit_code == 0);
    std::ifstream runs(dir + "/runs.csv");
    std::string line;
    int rows = -1; // the header
    while (std::getline(runs, line))
      ++rows;
    CHECK(rows == 2);

    // A damaged trace is run again, not taken as done nor a reason to stop.
    fs::resize_file(traces[0], 1000);
    const auto resumed = testing::run_cli("sweep " + sweep + " --resume");
    CHECK(resumed.exit_code == 0);
    CHECK(resumed.output.find("1 to run, 1 already done (1 unreadable traces rerun)") !=
          std::string::npos);
    check_trace(traces[0], false);
    CHECK_FALSE(fs::exists(traces[1] + ".partial"));

    // index.csv is RFC 4180: the folder's comma and the label's quotes survive a CSV reader.
    std::ifstream index(out + "/index.csv");
    std::getline(index, line);
    REQUIRE(std::getline(index, line));
    std::vector<std::string> fields(1);
    bool quoted = false;
    for (std::size_t i = 0; i < line.size(); ++i) {
      if (quoted && line[i] == '"' && i + 1 < line.size() && line[i + 1] == '"')
        fields.back() += line[++i];
      else if (line[i] == '"')
        quoted = !quoted;
      else if (line[i] == ',' && !quoted)
        fields.emplace_back();
      else
        fields.back() += line[i];
    }
    REQUIRE(fields.size() == 7); // point,status,final_test_accuracy,wall_s,trace,tuned,overrides
    CHECK(fields[1] == "completed");
    CHECK(fields[4] == traces[0]);
    // (The label, quoted in the sweep file, stays a quoted YAML string in the override.)
    CHECK(fields[6].find("label=\"D-PSGD \\\"async\\\", m=0\"") != std::string::npos);
  }

  TEST_CASE("a full output disk: exit 1, one line, and the .partial of the last checkpoint") {
    // A file-size limit (ulimit -f, SIGXFSZ ignored) makes writes fail as a full disk does,
    // without mounting anything.
    const std::string dir = testing::process_temp_dir("dtsim_crash_full_");
    std::string scenario = kScenario;
    scenario.replace(scenario.find("epochs: 3"), 9, "epochs: 30");
    scenario += "output: {events: full}\n"; // a growing event log fills the limit mid-run
    const std::string path = testing::write_temp_file(dir, "full.yaml", scenario);
    const std::string out = dir + "/full.h5";
    const std::string cmd = "bash -c \"trap '' XFSZ; ulimit -f 200; exec '" DTSIM_BINARY "' run " +
                            path + " -o " + out + " --quiet\" 2>&1";
    std::string output;
    FILE* pipe = popen(cmd.c_str(), "r");
    REQUIRE(pipe != nullptr);
    char buf[4096];
    std::size_t n;
    while ((n = fread(buf, 1, sizeof buf, pipe)) > 0)
      output.append(buf, n);
    const int status = pclose(pipe);
    CAPTURE(output);
    REQUIRE(WIFEXITED(status));
    CHECK(WEXITSTATUS(status) == 1);
    CHECK(std::count(output.begin(), output.end(), '\n') == 1);
    CHECK(output.find("File too large") != std::string::npos);
    CHECK(!fs::exists(out));
    REQUIRE(fs::exists(out + ".partial"));
    check_trace(out + ".partial", true);
    CHECK(read_trace(out + ".partial").metrics.at("sim_time_s").size() > 10);
  }
}
