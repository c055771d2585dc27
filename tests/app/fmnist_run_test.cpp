// SPDX-License-Identifier: MIT
// Short real-data runs on Fashion-MNIST (label: slow).
#include "run_cli.hpp"
#include "sim/trace/trace_reader.hpp"

#include <cmath>
#include <doctest/doctest.h>
#include <filesystem>
#include <map>
#include <string>
#include <vector>

using namespace dtsim;
using testing::run_cli;

TEST_SUITE("app") {
  TEST_CASE("Fashion-MNIST: an 8-node IID ring with an MLP reaches 0.80 within one epoch") {
    const std::string out =
        (std::filesystem::temp_directory_path() / "dtsim_fmnist_iid8.h5").string();
    const auto r =
        run_cli("run scenarios/quickstart.yaml -o " + out +
                " --quiet --set nodes=8 --set 'data.partition={kind: iid}'"
                " --set 'stop={epochs: 1}' --set eval.every_s=100 --set eval.per_node=false");
    REQUIRE(r.exit_code == 0);
    const TraceContents t = read_trace(out);
    CHECK(t.metrics.at("epoch").back() == doctest::Approx(1.0).epsilon(0.01));
    CHECK(t.metrics.at("test_accuracy").back() >= 0.80);
    CHECK(t.metrics.at("test_accuracy").front() < 0.25); // the initial model is near chance
  }

  TEST_CASE("Fashion-MNIST: LeNet on an 8-node IID ring reaches 0.80 within one epoch") {
    const std::string out =
        (std::filesystem::temp_directory_path() / "dtsim_fmnist_lenet8.h5").string();
    const auto r =
        run_cli("run scenarios/lenet-quick.yaml -o " + out + " --quiet --set eval.every_s=100");
    REQUIRE(r.exit_code == 0);
    const TraceContents t = read_trace(out);
    CHECK(t.metrics.at("epoch").back() == doctest::Approx(1.0).epsilon(0.01));
    CHECK(t.metrics.at("test_accuracy").back() >= 0.80);
  }

  TEST_CASE("Fashion-MNIST: ResNet-20 on a 2-node ring learns within 64 steps") {
    // The CPU reference of the seeds' model, on a 2,048-image subset (about 10 s on 2 cores).
    const std::string out =
        (std::filesystem::temp_directory_path() / "dtsim_fmnist_resnet20.h5").string();
    const auto r = run_cli("run scenarios/resnet20-quick.yaml -o " + out +
                           " --quiet --set nodes=2 --set data.train_samples=2048");
    REQUIRE(r.exit_code == 0);
    const TraceContents t = read_trace(out);
    const auto& accuracy = t.metrics.at("test_accuracy");
    const auto& loss = t.metrics.at("train_loss");
    CHECK(accuracy.front() < 0.15); // the initial model is near chance (0.1)
    CHECK(accuracy.back() >= 0.25); // 0.355 when this test was written
    CHECK(loss.back() < loss[1] - 0.3);
  }

  TEST_CASE("Fashion-MNIST: ResNet-20 runs write identical /metrics at 1 and 2 threads") {
    // Every ResNet buffer is per-thread scratch (TaskScratch, the evaluator's workspaces):
    // a value left over from another node's task would show here.
    std::map<std::string, std::vector<double>> metrics[2];
    for (int threads : {1, 2}) {
      const std::string out = (std::filesystem::temp_directory_path() /
                               ("dtsim_resnet_threads" + std::to_string(threads) + ".h5"))
                                  .string();
      const auto r = run_cli("run scenarios/resnet20-quick.yaml -o " + out + " --quiet --threads " +
                             std::to_string(threads) +
                             " --set nodes=3 --set data.train_samples=384 --set data.batch_size=16"
                             " --set 'stop={steps: 4}' --set eval.test_samples=100"
                             " --set eval.every_epochs=0 --set eval.every_s=0.5");
      REQUIRE(r.exit_code == 0);
      metrics[threads - 1] = read_trace(out).metrics;
    }
    REQUIRE(metrics[0].at("test_accuracy").size() > 2);
    for (const auto& [name, values] : metrics[0]) {
      if (name == "wall_time_s")
        continue;
      const std::string column = name; // a copy: clang 14 cannot capture bindings
      CAPTURE(column);
      const auto& other = metrics[1].at(name);
      REQUIRE(values.size() == other.size());
      for (std::size_t i = 0; i < values.size(); ++i)
        CHECK((values[i] == other[i] || (std::isnan(values[i]) && std::isnan(other[i]))));
    }
  }
}
