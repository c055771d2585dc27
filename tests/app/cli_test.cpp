// SPDX-License-Identifier: MIT
// The dtsim command line end to end: run, validate, list, topology, exit codes, traces.
#include "run_cli.hpp"
#include "sim/trace/trace_reader.hpp"

#include <cmath>
#include <cstdlib>
#include <doctest/doctest.h>
#include <filesystem>
#include <fstream>
#include <iterator>
#include <unistd.h>

using namespace dtsim;
using testing::run_cli;

namespace {

std::string temp_dir() {
  return testing::process_temp_dir("dtsim_cli_test_");
}

std::string write_file(const std::string& name, const std::string& text) {
  return testing::write_temp_file(temp_dir(), name, text);
}

const char* kTiny = R"(name: cli-tiny
seed: 5
nodes: 6
data:
  dataset: synthetic
  synthetic: {features: 12, classes: 3, train: 900, test: 300}
  partition: {kind: dirichlet, alpha: 0.5, min_size: 20}
  batch_size: 16
model: {kind: mlp, hidden: [16]}
topology: {kind: ring}
algorithm: {name: dsgd, mode: async, lr: 0.1, momentum: 0.9}
system: {compute: {dist: exponential, mean_s: 0.01}, network: {latency_s: 0.003}}
stop: {epochs: 2}
eval: {every_s: 0.02, per_node: true}
)";

} // namespace

TEST_SUITE("app") {
  TEST_CASE("dtsim topology prints degree, diameter, the spectral gap and lambda_min") {
    const auto r = run_cli("topology ring --nodes 16");
    CHECK(r.exit_code == 0);
    CHECK(r.output.find("spectral gap: 0.050747") != std::string::npos);
    CHECK(r.output.find("diameter: 8") != std::string::npos);
    // Metropolis weights 1/3 on an even ring: 1/3 + 2/3 cos(pi) = -1/3.
    CHECK(r.output.find("smallest eigenvalue of W: -0.333333") != std::string::npos);
    CHECK(run_cli("topology rign --nodes 16").exit_code == 2);
  }

  TEST_CASE("dtsim topology: a time-varying kind prints its union graph and its period") {
    const auto r = run_cli("topology one_peer_exponential --nodes 8");
    CHECK(r.exit_code == 0);
    CHECK(r.output.find("topology: one_peer_exponential, 8 nodes, 20 edges") != std::string::npos);
    CHECK(r.output.find("period: 3 rounds") != std::string::npos);
    CHECK(r.output.find("max |W(2)...W(0) - 11^T/n| = 0.000000") != std::string::npos);
    CHECK(run_cli("topology random_pairs --nodes 8").output.find("period: none") !=
          std::string::npos);
  }

  TEST_CASE("dtsim run: --threads 1 and --threads 2 write identical /metrics") {
    const std::string scenario = write_file("tiny.yaml", kTiny);
    const std::string out1 = temp_dir() + "/t1.h5", out2 = temp_dir() + "/t2.h5";
    const auto r1 = run_cli("run " + scenario + " -o " + out1 + " --threads 1");
    const auto r2 = run_cli("run " + scenario + " -o " + out2 + " --threads 2");
    REQUIRE(r1.exit_code == 0);
    REQUIRE(r2.exit_code == 0);
    CHECK(r1.output.find("final test accuracy") != std::string::npos);
    const TraceContents a = read_trace(out1), b = read_trace(out2);
    CHECK(a.text_attributes.at("status") == "completed");
    REQUIRE(a.metrics.size() == b.metrics.size());
    for (const auto& [name, values] : a.metrics) {
      if (name == "wall_time_s")
        continue;
      const std::string column = name; // a copy: clang 14 cannot capture bindings
      CAPTURE(column);
      const auto& other = b.metrics.at(name);
      REQUIRE(values.size() == other.size());
      for (std::size_t i = 0; i < values.size(); ++i)
        CHECK((values[i] == other[i] || (std::isnan(values[i]) && std::isnan(other[i]))));
    }
    CHECK(a.metrics.at("test_accuracy").back() > 0.6);
    CHECK(a.text_attributes.at("scenario").find("weight_decay: 0") != std::string::npos);
    CHECK(!std::filesystem::exists(out1 + ".partial"));
  }

  TEST_CASE("dtsim run: a batched run names its backend and its share of the wall time") {
    const std::string scenario = write_file("tiny.yaml", kTiny);
    const std::string out = temp_dir() + "/batched.h5";
    const auto batched =
        run_cli("run " + scenario + " -o " + out + " --set model.backend=cpu-batched");
    REQUIRE(batched.exit_code == 0);
    CHECK(batched.output.find("gradients: cpu-batched (") != std::string::npos);
    CHECK(batched.output.find("% of the wall time, mean batch ") != std::string::npos);
    CHECK(batched.output.find("bus ") == std::string::npos); // nothing crosses a bus on the CPU
    const auto plain = run_cli("run " + scenario + " -o " + out);
    REQUIRE(plain.exit_code == 0);
    CHECK(plain.output.find("gradients:") == std::string::npos);
  }

  TEST_CASE("dtsim validate: good and bad files, exit code 2 and one line per error") {
    CHECK(run_cli("validate " + write_file("ok.yaml", kTiny)).exit_code == 0);
    const auto bad =
        run_cli("validate " + write_file("bad.yaml", std::string(kTiny) + "algoritm: {}\n"));
    CHECK(bad.exit_code == 2);
    CHECK(bad.output.find(
              "bad.yaml:15: algoritm: unknown key 'algoritm' (did you mean 'algorithm'?)") !=
          std::string::npos);
    const auto missing = run_cli("run /nonexistent.yaml");
    CHECK(missing.exit_code == 2);
    CHECK(missing.output == "error: /nonexistent.yaml: cannot open the scenario file\n");
    CHECK(run_cli("run " + write_file("ok2.yaml", kTiny) + " --threads zero").exit_code == 2);
  }

  TEST_CASE("dtsim run: divergence gives exit code 3 and a trace that says so") {
    const std::string out = temp_dir() + "/div.h5";
    const auto r = run_cli("run " + write_file("div.yaml", kTiny) + " -o " + out +
                           " --set algorithm.lr=1e7 --quiet");
    CHECK(r.exit_code == 3);
    CHECK(read_trace(out).text_attributes.at("status") == "diverged");
  }

  TEST_CASE("dtsim sweep: a diverged point is a result (exit 0), counted apart from failures") {
    const std::string dir = temp_dir() + "/divsweep";
    std::filesystem::remove_all(dir);
    const std::string base = write_file("divbase.yaml", kTiny);
    const std::string sweep =
        write_file("divsweep.yaml", "name: divsweep\nbase: " + base + "\noutput: " + dir +
                                        "\ngrid:\n  algorithm.lr: [0.1, 1e7]\n");
    const auto r = run_cli("sweep " + sweep + " --jobs 1");
    CHECK(r.exit_code == 0);
    CHECK(r.output.find("2 points, 1 diverged (a result), 0 failed") != std::string::npos);
  }

  TEST_CASE("dtsim sweep: points that need a CUDA device this machine lacks are refused first") {
    if (run_cli("--version").output.find("device found") != std::string::npos) {
      MESSAGE("a CUDA device is present: nothing to refuse");
      return;
    }
    const std::string dir = temp_dir() + "/cudasweep";
    std::filesystem::remove_all(dir);
    const std::string base = write_file("cudabase.yaml", kTiny);
    const std::string sweep =
        write_file("cudasweep.yaml", "name: cudasweep\nbase: " + base + "\noutput: " + dir +
                                         "\ngrid:\n  model.backend: [cpu-batched, cuda]\n");
    const auto r = run_cli("sweep " + sweep + " --jobs 1");
    CHECK(r.exit_code == 2);
    // The sweep file's line and the point, not a --set nobody typed; then why ("no CUDA
    // device found", or a build without CUDA).
    CHECK(r.output.find(sweep + ":5: grid.model.backend[1] (point backend=cuda): ") !=
          std::string::npos);
    CHECK(r.output.find("CUDA") != std::string::npos);
    CHECK_FALSE(std::filesystem::exists(dir)); // nothing ran, not even the cpu-batched point
    // dtsim validate checks the file without a GPU (a GPU sweep can be checked anywhere).
    for (const char* backend : {"cuda", "cuda-batched", "cuda-resident"}) {
      CAPTURE(backend);
      CHECK(run_cli("validate " + base + " --set model.backend=" + backend).exit_code == 0);
    }
    const auto resident =
        run_cli("run " + base + " --set model.backend=cuda-resident -o " + dir + "/resident.h5");
    CHECK(resident.exit_code == 2);
    CHECK(resident.output.find("model.backend: ") != std::string::npos);
  }

  TEST_CASE("dtsim validate: backend cuda refuses a CNN kernel wider than 7, naming the key") {
    const std::string cnn = "validate scenarios/quickstart.yaml --set 'model={kind: cnn, ";
    const auto wide = run_cli(cnn + "kernel: 9, padding: [4, 4], backend: cuda}'");
    CHECK(wide.exit_code == 2);
    CHECK(wide.output.find("model.backend: backend cuda runs") != std::string::npos);
    CHECK(wide.output.find("kernels up to 7") != std::string::npos);
    CHECK(run_cli(cnn + "kernel: 7, padding: [3, 3], backend: cuda}'").exit_code == 0);
  }

  TEST_CASE("dtsim report of timing-only runs: no accuracy figures, no evaluation warning") {
    const std::string dir = temp_dir() + "/timing-report";
    std::filesystem::remove_all(dir);
    const auto run = run_cli("run scenarios/scale/timing-only-adpsgd.yaml -q --set nodes=8 "
                             "--set stop.steps=5 -o " +
                             dir + "/t.h5");
    REQUIRE(run.exit_code == 0);
    CHECK(run.output.find("warning") == std::string::npos);
    // A run with a model and as few evaluations is warned.
    const auto few = run_cli("run " + write_file("few.yaml", kTiny) + " -q -o " + dir +
                             "/../few.h5 --set 'eval={every_s: 1000}'");
    CHECK(few.output.find("only 2 evaluations (fewer than 20)") != std::string::npos);
    REQUIRE(run_cli("report " + dir).exit_code == 0);
    std::ifstream in(dir + "/report.md");
    const std::string text((std::istreambuf_iterator<char>(in)), std::istreambuf_iterator<char>());
    CHECK(text.find("None: no run has a test accuracy") != std::string::npos);
    CHECK_FALSE(std::filesystem::exists(dir + "/report-img/curves.png"));
    // A key missing from every trace is blamed on the option that named it.
    CHECK(run_cli("report " + dir + " --vs nodez")
              .output.find("error: --vs: no trace has key "
                           "'nodez' (did you mean 'nodes'?)") != std::string::npos);
  }

  TEST_CASE("dtsim list names every registry") {
    const auto r = run_cli("list");
    CHECK(r.exit_code == 0);
    for (const char* name : {"dsgd", "asgd", "mlp", "softmax", "ring", "torus", "dirichlet",
                             "shards", "fashion-mnist", "lognormal"})
      CHECK(r.output.find(name) != std::string::npos);
  }

  TEST_CASE("every shipped scenario runs a few steps and every sweep file expands") {
    for (const auto& entry :
         std::filesystem::recursive_directory_iterator(DTSIM_SOURCE_DIR "/scenarios")) {
      if (entry.path().extension() != ".yaml")
        continue;
      CAPTURE(entry.path());
      std::ifstream in(entry.path());
      const std::string text((std::istreambuf_iterator<char>(in)),
                             std::istreambuf_iterator<char>());
      if (text.find("\ngrid:") != std::string::npos ||
          text.find("\npoints:") != std::string::npos) {
        // A sweep file: expanding it must work (its runs are the base scenario's).
        CHECK(run_cli("sweep " + entry.path().string() + " --dry-run").exit_code == 0);
        continue;
      }
      const std::string out = temp_dir() + "/smoke.h5";
      // A smoke run: two steps, a small epoch and (where there is a model to evaluate) a small
      // test set, so that even ResNet-20 under the sanitizers takes seconds.
      const bool timing_only = text.find("model: {kind: none") != std::string::npos;
      const auto r = run_cli("run " + entry.path().string() + " -o " + out +
                             " --set 'stop={steps: 2}' --set data.train_samples=4000 --quiet" +
                             (timing_only ? "" : " --set eval.test_samples=200"));
      CHECK(r.exit_code == 0);
      CHECK(read_trace(out).text_attributes.at("status") == "completed");
    }
  }
}

TEST_SUITE("app") {
  TEST_CASE("dtsim analyze: per-run rows, groups over seeds, CSV, and plot.py draws them") {
    const std::string dir = temp_dir() + "/analyze";
    std::filesystem::remove_all(dir);
    std::filesystem::create_directories(dir);
    const std::string scenario = write_file("an.yaml", kTiny);
    for (const char* alg : {"asgd", "gsgm"})
      for (const char* seed : {"1", "2"}) {
        const auto r = run_cli("run " + scenario + " --quiet -o " + dir + "/" + alg + seed +
                               ".h5 --set seed=" + seed + " --set 'algorithm={name: " + alg +
                               ", lr: 0.01}' --set 'stop={epochs: 1}'");
        REQUIRE(r.exit_code == 0);
      }
    const auto rows = run_cli("analyze " + dir + " --csv " + dir + "/table.csv");
    CHECK(rows.exit_code == 0);
    CHECK(rows.output.find("asgd1.h5") != std::string::npos);
    CHECK(rows.output.find("completed") != std::string::npos);
    const auto grouped = run_cli("analyze " + dir + " --by algorithm.name --markdown");
    CHECK(grouped.exit_code == 0);
    CHECK(grouped.output.find("| algorithm.name | runs |") == 0);
    CHECK(grouped.output.find("| gsgm           | 2    |") != std::string::npos);
    const auto gains =
        run_cli("analyze " + dir + " --by algorithm.name --baseline algorithm.name=asgd");
    CHECK(gains.exit_code == 0);
    CHECK(gains.output.find("gain_std_2nd_half_%") != std::string::npos);
    CHECK(gains.output.find("asgd            2     ") != std::string::npos);
    std::ifstream csv(dir + "/table.csv");
    std::string header;
    std::getline(csv, header);
    CHECK(header.rfind("trace,status,final_acc,best_acc", 0) == 0);
    CHECK(run_cli("analyze " + dir + " --columns final_accuracy").exit_code == 2);

    const std::string plot = "/usr/bin/python3 '" DTSIM_SOURCE_DIR "/analysis/plot.py' " + dir +
                             " --panel nodes --colour algorithm.name -o " + dir + "/curves";
    CHECK(std::system(plot.c_str()) == 0);
    CHECK(std::filesystem::file_size(dir + "/curves.png") > 1000);
    CHECK(std::filesystem::exists(dir + "/curves.svg"));
    // A measure against a column of the analysis table.
    REQUIRE(run_cli("analyze " + dir + " --by nodes,algorithm.name --csv " + dir + "/by.csv")
                .exit_code == 0);
    const std::string vs =
        "/usr/bin/python3 '" DTSIM_SOURCE_DIR "/analysis/plot.py' " + dir +
        "/by.csv --vs nodes --colour algorithm.name --measure acc_std_2nd_half -o " + dir + "/vs";
    CHECK(std::system(vs.c_str()) == 0);
    CHECK(std::filesystem::file_size(dir + "/vs.png") > 1000);
  }
}

TEST_SUITE("app") {
  TEST_CASE("dtsim sweep: parallel points equal single runs, resume reruns only what is missing") {
    const std::string dir = temp_dir() + "/sweep";
    std::filesystem::remove_all(dir);
    std::filesystem::create_directories(dir);
    std::ofstream(dir + "/base.yaml") << kTiny;
    std::ofstream(dir + "/sweep.yaml") << "name: tiny-sweep\nbase: base.yaml\noutput: " << dir
                                       << "/out\ngrid:\n  algorithm.mode: [sync, async]\n"
                                          "  seed: [1, 2]\n";
    const auto dry = run_cli("sweep " + dir + "/sweep.yaml --dry-run");
    CHECK(dry.exit_code == 0);
    CHECK(dry.output.find("mode=async_seed=2  --set 'algorithm.mode=async'") != std::string::npos);

    const auto first = run_cli("sweep " + dir + "/sweep.yaml --jobs 2");
    REQUIRE(first.exit_code == 0);
    CHECK(first.output.find("4/4 done, 0 running, 0 diverged, 0 failed") != std::string::npos);
    std::ifstream index(dir + "/out/index.csv");
    std::string line;
    int completed = 0;
    while (std::getline(index, line))
      completed += line.find(",\"completed\",") != std::string::npos;
    CHECK(completed == 4);

    // One point alone gives the same /metrics as in the parallel sweep.
    const std::string alone = dir + "/alone.h5";
    REQUIRE(run_cli("run " + dir + "/base.yaml -o " + alone +
                    " --quiet --set algorithm.mode=async --set seed=2"
                    " --set name=tiny-sweep_mode=async_seed=2")
                .exit_code == 0);
    const TraceContents a = read_trace(alone);
    const TraceContents b = read_trace(dir + "/out/mode=async_seed=2.h5");
    for (const auto& [name, values] : a.metrics)
      if (name != "wall_time_s") {
        const std::string column = name; // a copy: clang 14 cannot capture bindings
        CAPTURE(column);
        const auto& other = b.metrics.at(name);
        REQUIRE(values.size() == other.size());
        for (std::size_t i = 0; i < values.size(); ++i)
          CHECK((values[i] == other[i] || (std::isnan(values[i]) && std::isnan(other[i]))));
      }

    // A killed sweep: one trace lost, one left as .partial. --resume reruns exactly those.
    std::filesystem::remove(dir + "/out/mode=sync_seed=1.h5");
    std::filesystem::rename(dir + "/out/mode=sync_seed=2.h5",
                            dir + "/out/mode=sync_seed=2.h5.partial");
    const auto kept = std::filesystem::last_write_time(dir + "/out/mode=async_seed=1.h5");
    const auto resumed = run_cli("sweep " + dir + "/sweep.yaml --resume --jobs 2");
    CHECK(resumed.exit_code == 0);
    CHECK(resumed.output.find("2 to run, 2 already done") != std::string::npos);
    CHECK(std::filesystem::exists(dir + "/out/mode=sync_seed=1.h5"));
    CHECK(std::filesystem::exists(dir + "/out/mode=sync_seed=2.h5"));
    CHECK(!std::filesystem::exists(dir + "/out/mode=sync_seed=2.h5.partial"));
    CHECK(std::filesystem::last_write_time(dir + "/out/mode=async_seed=1.h5") == kept);

    // Each trace carries its point's digest; --resume compares it and nothing else, so an
    // edited comment keeps every trace and a changed setting reruns every point.
    const TraceContents attributes = read_trace_attributes(dir + "/out/mode=async_seed=1.h5");
    CHECK(attributes.text_attributes.at("sweep_point").size() == 16);
    CHECK(attributes.metrics.empty());
    std::ofstream(dir + "/base.yaml") << "# an edited comment\n" << kTiny;
    const auto unchanged = run_cli("sweep " + dir + "/sweep.yaml --resume");
    CHECK(unchanged.output.find("0 to run, 4 already done\n") != std::string::npos);
    std::ofstream(dir + "/base.yaml") << kTiny << "seed: 6\n";
    const auto bad = run_cli("sweep " + dir + "/sweep.yaml --resume");
    CHECK(bad.exit_code == 2); // a duplicate key, found before anything runs
    std::string changed_base = kTiny;
    changed_base.replace(changed_base.find("epochs: 2"), 9, "epochs: 1");
    std::ofstream(dir + "/base.yaml") << changed_base;
    const auto changed = run_cli("sweep " + dir + "/sweep.yaml --resume --jobs 2");
    CHECK(changed.exit_code == 0);
    CHECK(
        changed.output.find("4 to run, 0 already done (4 traces rerun: their settings changed)") !=
        std::string::npos);
    CHECK(std::filesystem::last_write_time(dir + "/out/mode=async_seed=1.h5") != kept);

    // Shards split the points between invocations.
    const auto s1 = run_cli("sweep " + dir + "/sweep.yaml --dry-run --shard 1/2");
    CHECK(s1.output.find("4 points (2 in shard 1/2)") != std::string::npos);
    CHECK(run_cli("sweep " + dir + "/sweep.yaml --shard 3/2").exit_code == 2);
  }
}
