// SPDX-License-Identifier: MIT
// What a new user meets first: help on every command, validate with overrides, dotted
// topology keys, dry runs that validate, and the listing of every registered name.
#include "run_cli.hpp"

#include <doctest/doctest.h>
#include <filesystem>
#include <string>

using dtsim::testing::process_temp_dir;
using dtsim::testing::run_cli;
using dtsim::testing::write_temp_file;

namespace {

bool has(const std::string& text, const std::string& part) {
  return text.find(part) != std::string::npos;
}

} // namespace

TEST_SUITE("newcomer") {
  TEST_CASE("every command answers --help and -h with its options, exit 0") {
    const std::pair<const char*, const char*> commands[] = {{"run", "--threads N"},
                                                            {"sweep", "--dry-run"},
                                                            {"validate", "--set key=value"},
                                                            {"analyze", "--baseline"},
                                                            {"report", "--vs key"},
                                                            {"topology", "--nodes N"},
                                                            {"list", "compute-time distributions"}};
    for (const auto& [command, option] : commands) {
      const std::string command_name = command; // a copy: clang 14 cannot capture bindings
      CAPTURE(command_name);
      for (const char* flag : {"--help", "-h"}) {
        const auto r = run_cli(std::string(command) + " " + flag);
        CHECK(r.exit_code == 0);
        CHECK(has(r.output, std::string("usage: dtsim ") + command));
        CHECK(has(r.output, option));
      }
    }
    const auto bad = run_cli("run --hlep");
    CHECK(bad.exit_code == 2);
    CHECK(has(bad.output, "(see dtsim run --help)"));
  }

  TEST_CASE("validate takes --set, and topology takes both key=value and topology.key=value") {
    const auto ok = run_cli("validate scenarios/quickstart.yaml --set nodes=8");
    CHECK(ok.exit_code == 0);
    CHECK(has(ok.output, "ok (8 nodes,"));
    const auto bad = run_cli("validate scenarios/quickstart.yaml --set nodes=0");
    CHECK(bad.exit_code == 2);
    CHECK(has(bad.output, "nodes"));
    const auto plain = run_cli("topology edges --nodes 4 --set file=/no/such.txt");
    const auto dotted = run_cli("topology edges --nodes 4 --set topology.file=/no/such.txt");
    CHECK(plain.exit_code == 2);
    CHECK(dotted.exit_code == 2);
    CHECK(has(dotted.output, "cannot open edge-list file /no/such.txt"));
  }

  TEST_CASE("sweep --dry-run validates every point, and list names the trace distribution") {
    const std::string dir = process_temp_dir("dtsim_newcomer_");
    const std::string sweep =
        write_temp_file(dir, "sweep.yaml",
                        "name: dry\nbase: " DTSIM_SOURCE_DIR "/scenarios/quickstart.yaml\n"
                        "output: " +
                            dir + "/out\ngrid:\n  algorithm.lr: [0.1, -1]\n");
    const auto dry = run_cli("sweep " + sweep + " --dry-run");
    CHECK(dry.exit_code == 2);
    CHECK(has(dry.output, "algorithm.lr"));
    CHECK(has(run_cli("list").output, "  trace "));
  }

  TEST_CASE("relative paths in a scenario resolve against the scenario's folder") {
    const std::string dir = process_temp_dir("dtsim_newcomer_paths_");
    std::filesystem::create_directories(dir + "/sub");
    write_temp_file(dir + "/sub", "e.txt", "0 1\n1 2\n2 3\n3 0\n");
    const std::string scenario =
        write_temp_file(dir + "/sub", "s.yaml",
                        "nodes: 4\ndata: {dataset: synthetic}\nmodel: {kind: softmax}\n"
                        "topology: {kind: edges, file: e.txt}\nstop: {steps: 2}\n"
                        "output: {path: ../out/t.h5}\n");
    // Run from the source folder, far from the file: e.txt is found beside s.yaml and the
    // trace lands in <dir>/out.
    const auto r = run_cli("run " + scenario + " --quiet");
    CHECK(r.exit_code == 0);
    CHECK(std::filesystem::exists(dir + "/out/t.h5"));
    // A --set path stays relative to the current folder (here the source folder).
    const auto moved = run_cli("validate " + scenario + " --set topology.file=e.txt");
    CHECK(moved.exit_code == 2);
    CHECK(has(moved.output, "cannot open edge-list file e.txt"));
  }

  TEST_CASE("a misspelled section is named with did-you-mean, and a sweep file is told so") {
    const std::string dir = process_temp_dir("dtsim_newcomer_keys_");
    const std::string typo = write_temp_file(dir, "s.yaml",
                                             "nodes: 4\ndata: {dataset: synthetic}\n"
                                             "stopp: {steps: 2}\n");
    const auto r = run_cli("validate " + typo);
    CHECK(r.exit_code == 2);
    CHECK(has(r.output, "s.yaml:3: stopp: unknown key 'stopp' (did you mean 'stop'?)"));
    const auto sweep = run_cli("validate scenarios/sweeps/gsgm.yaml");
    CHECK(sweep.exit_code == 2);
    CHECK(has(sweep.output, "this is a sweep file"));
    CHECK(has(sweep.output, "dtsim sweep scenarios/sweeps/gsgm.yaml"));
  }
}

TEST_SUITE("newcomer") {
  TEST_CASE("on a terminal the progress line says which time is simulated and which is wall") {
    // `script` (util-linux, in every Debian) gives the run a pseudo-terminal; in a pipe or a
    // log the line stays quiet.
    const std::string dir = process_temp_dir("dtsim_newcomer_progress_");
    const std::string run = std::string("'" DTSIM_BINARY "' run " DTSIM_SOURCE_DIR
                                        "/scenarios/quickstart.yaml --set stop.epochs=0.2 "
                                        "--set data.train_samples=4000 -o ") +
                            dir + "/p.h5";
    std::string output;
    FILE* pipe = popen(("script -qec \"" + run + "\" /dev/null 2>&1").c_str(), "r");
    REQUIRE(pipe != nullptr);
    char buf[4096];
    std::size_t n;
    while ((n = fread(buf, 1, sizeof buf, pipe)) > 0)
      output.append(buf, n);
    REQUIRE(pclose(pipe) == 0);
    CHECK(has(output, "sim t="));
    CHECK(has(output, " loss "));
    CHECK(has(output, "| wall ETA"));
    const auto quiet = run_cli(std::string("run scenarios/quickstart.yaml --set stop.epochs=0.2 "
                                           "--set data.train_samples=4000 -o ") +
                               dir + "/q.h5");
    CHECK(quiet.exit_code == 0);
    CHECK(!has(quiet.output, "sim t="));
  }
}
