// SPDX-License-Identifier: MIT
// Whole runs on the CUDA backend against the CPU backend (need a CUDA device).
#include "cuda/cuda_backend.hpp"
#include "run_cli.hpp"
#include "sim/trace/trace_reader.hpp"

#include <algorithm>
#include <bit>
#include <cmath>
#include <cstdint>
#include <cstdlib>
#include <doctest/doctest.h>
#include <string>
#include <utility>

using namespace dtsim;
using testing::run_cli;

namespace {

// The quickstart (16-node ring, MLP, D-PSGD with momentum, stragglers) for one epoch, or
// another scenario with `extra` settings.
TraceContents run(const std::string& backend, const std::string& name,
                  const std::string& scenario = "scenarios/quickstart.yaml",
                  const std::string& extra = "--set stop.epochs=1") {
  const std::string out = testing::process_temp_dir("dtsim_cuda_") + "/" + name + ".h5";
  const auto r = run_cli("run " + scenario + " -o " + out + " --quiet " + extra +
                         " --set model.backend=" + backend);
  INFO(r.output);
  REQUIRE(r.exit_code == 0);
  return read_trace(out);
}

// run() of the quickstart with the environment's `variable` set to `value` (a kernel choice,
// cuda_backend.cpp), unset however the run ends (a failed REQUIRE throws), so that no later
// case sees it.
TraceContents run_where(const char* variable, const char* value, const std::string& backend,
                        const std::string& name, const std::string& extra) {
  ::setenv(variable, value, 1);
  const struct Unset {
    const char* variable;
    ~Unset() { ::unsetenv(variable); }
  } unset{variable};
  return run(backend, name, "scenarios/quickstart.yaml", extra);
}

// Whether to run: a device is needed. The output line is what CTest reports as skipped.
bool have_device() {
  const std::string why = cuda::unavailable_reason();
  if (!why.empty())
    MESSAGE("SKIPPED: " << why);
  return why.empty();
}

bool same_bits(const std::vector<double>& a, const std::vector<double>& b) {
  return a.size() == b.size() && std::equal(a.begin(), a.end(), b.begin(), [](double x, double y) {
           return std::bit_cast<std::uint64_t>(x) == std::bit_cast<std::uint64_t>(y);
         });
}

// Every column of a the same bits as b's, but the one column of wall time.
void check_same_columns(const TraceContents& a, const TraceContents& b) {
  REQUIRE(a.metrics.size() == b.metrics.size());
  for (const auto& [column, values] : a.metrics) {
    CAPTURE(column);
    if (column != "wall_time_s")
      CHECK(same_bits(values, b.metrics.at(column)));
  }
}

// The last value of `column` in a over its last value in b, less 1.
double relative_gap(const TraceContents& a, const TraceContents& b, const char* column) {
  return std::abs(a.metrics.at(column).back() / b.metrics.at(column).back() - 1);
}

// Half an epoch of the quickstart with `extra` on cpu-resident, then twice on cuda-resident:
// the device's run attaches, makes the CPU's gradient steps, ends within accuracy_gap (0.5
// accuracy points unless said) of it and repeats bit for bit in the losses, the accuracy and
// `more` columns. Returns the CPU's run and the device's.
std::pair<TraceContents, TraceContents>
check_resident_twin(const std::string& extra, std::initializer_list<const char*> more = {},
                    double accuracy_gap = 0.005) {
  const std::string settings = "--set stop.epochs=0.5 " + extra;
  TraceContents cpu = run("cpu-resident", "twin-cpu", "scenarios/quickstart.yaml", settings);
  TraceContents gpu = run("cuda-resident", "twin-cuda", "scenarios/quickstart.yaml", settings);
  const TraceContents again =
      run("cuda-resident", "twin-cuda-again", "scenarios/quickstart.yaml", settings);
  CHECK(gpu.number_attributes.at("resident_vectors") == 1);
  CHECK(gpu.number_attributes.at("gradient_steps") == cpu.number_attributes.at("gradient_steps"));
  CHECK(std::abs(gpu.metrics.at("test_accuracy").back() - cpu.metrics.at("test_accuracy").back()) <=
        accuracy_gap);
  std::vector<const char*> columns = {"test_accuracy", "test_loss", "train_loss"};
  columns.insert(columns.end(), more.begin(), more.end());
  for (const char* column : columns) {
    CAPTURE(column);
    CHECK(same_bits(gpu.metrics.at(column), again.metrics.at(column)));
  }
  return {std::move(cpu), std::move(gpu)};
}

} // namespace

TEST_SUITE("cuda") {
  TEST_CASE("CUDA: a Fashion-MNIST run ends within 0.5 accuracy points of the CPU's") {
    if (!have_device())
      return;
    const TraceContents cpu = run("cpu", "cpu");
    const TraceContents gpu = run("cuda-batched", "cuda");
    const TraceContents again = run("cuda-batched", "cuda-again");
    CHECK(gpu.text_attributes.at("gradient_backend").rfind("cuda-batched on ", 0) == 0);
    CHECK(std::abs(gpu.metrics.at("test_accuracy").back() -
                   cpu.metrics.at("test_accuracy").back()) <= 0.005);
    // The averaged model and the node models (on the host with backend cuda-batched) scored by
    // the device's evaluation pass at every evaluation; by the host on the CPU.
    CHECK(gpu.number_attributes.at("backend_evaluated_models") ==
          17.0 * static_cast<double>(gpu.metrics.at("test_accuracy").size()));
    // The same GPU and build give the same trace (bit for bit: train_loss's first row, before
    // any step, is NaN, which == would call different from itself).
    for (const char* column : {"test_accuracy", "test_loss", "train_loss", "consensus_distance"}) {
      CAPTURE(column);
      CHECK(same_bits(gpu.metrics.at(column), again.metrics.at(column)));
    }
  }

  TEST_CASE("CUDA: a short ResNet-20 run ends within 0.5 accuracy points of the CPU's") {
    if (!have_device())
      return;
    // 4 nodes, 40 synchronous rounds of 32 Fashion-MNIST images each, the averaged model
    // evaluated at the start and the end on the whole test split: on 1,000 images one
    // image is 0.1 points, and two float trajectories 40 steps apart differ by a few images.
    const std::string scenario = "scenarios/resnet20-quick.yaml";
    const std::string extra = "--set 'stop={steps: 40}' --set 'eval={every_s: 1000}'";
    const TraceContents cpu = run("cpu", "resnet-cpu", scenario, extra);
    const TraceContents gpu = run("cuda-batched", "resnet-cuda", scenario, extra);
    const TraceContents again = run("cuda-batched", "resnet-cuda-again", scenario, extra);
    CHECK(std::abs(gpu.metrics.at("test_accuracy").back() -
                   cpu.metrics.at("test_accuracy").back()) <= 0.005);
    CHECK(same_bits(gpu.metrics.at("test_loss"), again.metrics.at("test_loss")));
    CHECK(same_bits(gpu.metrics.at("train_loss"), again.metrics.at("train_loss")));
  }

  TEST_CASE("CUDA: backend cuda keeps the vectors on the device where they fit") {
    if (!have_device())
      return;
    // The quickstart's 16 MLP nodes fit any device: cuda runs as cuda-resident, bit for bit.
    const std::string settings = "--set stop.epochs=0.25";
    const TraceContents chosen = run("cuda", "cuda-chosen", "scenarios/quickstart.yaml", settings);
    const TraceContents resident =
        run("cuda-resident", "cuda-named", "scenarios/quickstart.yaml", settings);
    CHECK(chosen.text_attributes.at("gradient_backend") ==
          resident.text_attributes.at("gradient_backend"));
    CHECK(chosen.text_attributes.at("gradient_backend").rfind("cuda-resident on ", 0) == 0);
    CHECK(chosen.number_attributes.at("resident_vectors") == 1);
    for (const char* column : {"test_accuracy", "test_loss", "train_loss", "consensus_distance"}) {
      CAPTURE(column);
      CHECK(same_bits(chosen.metrics.at(column), resident.metrics.at(column)));
    }
  }

  TEST_CASE("CUDA: backend cuda whose vectors fit neither the device nor the host is refused "
            "by the host's check, which names the fallback") {
    if (!have_device())
      return;
    // 150 nodes of a 74 M-parameter MLP: about 220 GB of resident vectors (more than any
    // device's memory), then 135 GB of host vectors as cuda-batched (more than the host
    // limit of 16 GiB). cuda-resident is refused by the device's check, cuda by the host's
    // second check, which names the fallback: each one line, exit 2, before the run.
    const std::string big = "run scenarios/quickstart.yaml --quiet -o /nonexistent/x.h5 --set "
                            "nodes=150 --set 'model={kind: mlp, hidden: [8192, 8192]}' "
                            "--set model.backend=";
    for (const auto& [backend, why] :
         {std::pair{"cuda-resident", "more than the"},
          std::pair{"cuda", "backend cuda: the node vectors did not fit the GPU either"}}) {
      CAPTURE(backend);
      const auto r = run_cli(big + backend);
      INFO(r.output);
      CHECK(r.exit_code == 2);
      CHECK(r.output.find(why) != std::string::npos);
      CHECK(std::count(r.output.begin(), r.output.end(), '\n') == 1);
    }
  }

  TEST_CASE("CUDA: cuda-resident keeps the vectors on the device and matches cpu-resident") {
    if (!have_device())
      return;
    // The quickstart is synchronous adapt-then-combine D-PSGD: resident on both.
    const TraceContents cpu = run("cpu-resident", "resident-cpu");
    const TraceContents gpu = run("cuda-resident", "resident-cuda");
    const TraceContents again = run("cuda-resident", "resident-cuda-again");
    CHECK(gpu.number_attributes.at("resident_vectors") == 1);
    CHECK(std::abs(gpu.metrics.at("test_accuracy").back() -
                   cpu.metrics.at("test_accuracy").back()) <= 0.005);
    // The quickstart's per-node accuracies are evaluated where the rows are (the MLP's
    // evaluation pass on the device; cpu-resident's own rows since 2026-11-27): no
    // evaluation brings the models to the host.
    CHECK(gpu.number_attributes.at("resident_model_pulls") == 0);
    CHECK(cpu.number_attributes.at("resident_model_pulls") == 0);
    for (const char* column : {"node_accuracy_mean", "node_accuracy_min", "node_accuracy_max"}) {
      CAPTURE(column);
      CHECK(std::abs(gpu.metrics.at(column).back() - cpu.metrics.at(column).back()) <= 0.01);
    }
    for (const char* column : {"test_accuracy", "test_loss", "train_loss", "consensus_distance",
                               "node_accuracy_mean", "node_accuracy_std"}) {
      CAPTURE(column);
      CHECK(same_bits(gpu.metrics.at(column), again.metrics.at(column)));
    }
    // Per node-step only the minibatch indices, the plans and the loss cross the bus, and
    // the models at each evaluation: far less than the 1.9 MB of backend cuda.
    const double bus = (gpu.number_attributes.at("host_to_device_bytes") +
                        gpu.number_attributes.at("device_to_host_bytes")) /
                       gpu.number_attributes.at("gradient_steps");
    MESSAGE("cuda-resident bus per node-step: " << bus << " bytes");
    CHECK(bus < 0.5e6);
    // The stream's phases, timed by its events, are disjoint stretches of one stream: each
    // measured, together within the wall time; the CPU has none.
    const auto& a = gpu.number_attributes;
    CHECK(a.at("device_mixing_wall_seconds") > 0);
    CHECK(a.at("device_steps_wall_seconds") > 0);
    CHECK(a.at("device_idle_wall_seconds") >= 0);
    CHECK(a.at("device_mixing_wall_seconds") + a.at("device_upload_wall_seconds") +
              a.at("device_compute_wall_seconds") + a.at("device_download_wall_seconds") +
              a.at("device_steps_wall_seconds") + a.at("device_idle_wall_seconds") <=
          a.at("wall_seconds"));
    for (const char* phase : {"mixing", "steps", "idle"})
      CHECK(cpu.number_attributes.at(std::string("device_") + phase + "_wall_seconds") == 0);
    // Without per-node accuracies an evaluation's mean and consensus distance are computed
    // on the device (cuda_resident_test.cpp checks them): the models never come to the host.
    const std::string eval = "--set stop.epochs=1 --set 'eval={every_s: 4.0}'";
    const TraceContents cpu_mean =
        run("cpu-resident", "mean-cpu", "scenarios/quickstart.yaml", eval);
    const TraceContents gpu_mean =
        run("cuda-resident", "mean-cuda", "scenarios/quickstart.yaml", eval);
    CHECK(gpu_mean.number_attributes.at("resident_model_pulls") == 0);
    CHECK(std::abs(gpu_mean.metrics.at("test_accuracy").back() -
                   cpu_mean.metrics.at("test_accuracy").back()) <= 0.005);
    // LeNet's per-node accuracies are evaluated on the device too (its evaluation pass).
    const std::string lenet = "--set 'model={kind: lenet}' --set stop.epochs=0.5";
    const TraceContents cpu_lenet =
        run("cpu-resident", "lenet-cpu", "scenarios/quickstart.yaml", lenet);
    const TraceContents gpu_lenet =
        run("cuda-resident", "lenet-cuda", "scenarios/quickstart.yaml", lenet);
    CHECK(gpu_lenet.number_attributes.at("resident_model_pulls") == 0);
    CHECK(cpu_lenet.number_attributes.at("resident_model_pulls") == 0);
    for (const char* column : {"test_accuracy", "node_accuracy_mean"}) {
      CAPTURE(column);
      CHECK(std::abs(gpu_lenet.metrics.at(column).back() - cpu_lenet.metrics.at(column).back()) <=
            0.01);
    }
  }

  TEST_CASE("CUDA: other cuda-resident configurations match cpu-resident and repeat bit for bit") {
    if (!have_device())
      return;
    // Asynchronous DSGDm (momentum, batches of whichever nodes start together),
    // asynchronous D-PSGD with network jitter (messages overtake each other, so the mixing
    // plans name message ids out of order), QG-DSGDm-N (the quasi-global buffer refreshed
    // in the mixing kernel; with a refresh period, the displacement summed there),
    // combine-then-adapt DSGDm-N (u kept in the gradient's row, the model itself mixed) and AD-PSGD
    // with momentum, every node active (live models on the device, each averaging a queued vector
    // step, deadlocks broken in the increment form) and ASGD with server momentum (the server's
    // vectors on the device), DC-ASGD (the compensation against the worker's model row; constant
    // and adaptive), GSGM as the stability protocol runs it (its table in the live rows, the double
    // sum on the device), SSGD with momentum and gradient tracking with momentum (trackers, g_prev
    // and two-vector messages on the device), D2 on an odd ring (x_prev and lr g_prev there),
    // DecentLaM (its momentum in the mixing kernel), momentum tracking (m, d, the all-reduce of the
    // first gradients and two-vector messages on the device) and SwarmSGD with the lattice
    // quantizer's nearest rounding, with fp16, and blocking (its public models, y, o and the
    // codec's steps on the device; no draws, so that its partners are the CPU's): half an
    // epoch each.
    for (const char* algorithm :
         {"--set 'algorithm={name: dsgdm, lr: 0.05, momentum: 0.9, mode: async}'",
          "--set 'algorithm={name: dsgd, lr: 0.05, mode: async}' "
          "--set system.network.jitter_s=0.01",
          "--set 'algorithm={name: qg-dsgdm-n, lr: 0.05}'",
          "--set 'algorithm={name: qg-dsgdm-n, lr: 0.05, refresh_period: 3}'",
          "--set 'algorithm={name: dsgdm-n, lr: 0.05, order: combine_then_adapt}'",
          "--set 'algorithm={name: ad-psgd, lr: 0.05, momentum: 0.9, split: none}'",
          "--set 'algorithm={name: asgd, lr: 0.01, momentum: 0.5}'",
          "--set 'algorithm={name: dc-asgd, lr: 0.01, momentum: 0.5}'",
          "--set 'algorithm={name: dc-asgd, lr: 0.01, momentum: 0.5, variant: adaptive}'",
          "--set 'algorithm={name: gsgm, lr: 0.001, momentum: 0.9}'",
          "--set 'algorithm={name: ssgd, lr: 0.05, momentum: 0.9}'",
          "--set 'algorithm={name: gradient-tracking, lr: 0.02, momentum: 0.9}'",
          "--set 'algorithm={name: d2, lr: 0.02}' --set nodes=17",
          "--set 'algorithm={name: decentlam, lr: 0.02}'",
          "--set 'algorithm={name: momentum-tracking, lr: 0.02}'",
          "--set 'algorithm={name: swarm-sgd, lr: 0.05, momentum: 0.9, "
          "compressor: {kind: lattice, bits: 8, side: 0.002}}'",
          "--set 'algorithm={name: swarm-sgd, lr: 0.05, compressor: {kind: fp16}}'",
          "--set 'algorithm={name: swarm-sgd, lr: 0.05, blocking: true, "
          "compressor: {kind: lattice, bits: 8, side: 0.002}}'"}) {
      CAPTURE(algorithm);
      if (std::string(algorithm).find("swarm-sgd") == std::string::npos) {
        check_resident_twin(algorithm);
        continue;
      }
      // SwarmSGD: the device codec's figures too, taken at the evaluations; the same
      // partners and rounding, so the CPU's quantities within their last bits (fused
      // multiply-adds).
      const auto [cpu, gpu] =
          check_resident_twin(algorithm, {"quantization_error", "decode_failures"});
      CHECK(cpu.metrics.at("quantization_error_rel").back() > 0);
      CHECK(relative_gap(gpu, cpu, "quantization_error_rel") < 0.05);
      // Decoding failures: the models differ in their last bits (fused multiply-adds), so
      // a coordinate near a decoding boundary may fall either way; the same count within a
      // quarter (or 10).
      const double cpu_failures = cpu.metrics.at("decode_failures").back();
      CHECK(std::abs(gpu.metrics.at("decode_failures").back() - cpu_failures) <=
            std::max(10.0, 0.25 * cpu_failures));
    }
  }

  TEST_CASE("CUDA: the engine thread's element-wise steps give the same bits as programs or one "
            "kernel each") {
    if (!have_device())
      return;
    // Every method whose steps run on the engine thread (apply, decode, own_view), queued as
    // vector programs (the default) and launched one kernel each
    // (DTSIM_CUDA_VECTOR_PROGRAMS=0): AD-PSGD's averagings, ASGD's and the adaptive
    // DC-ASGD's server steps, GSGM's double sum, SwarmSGD's decodings and own views with the
    // stochastic lattice and error feedback (their encodings steps of the programs too). The same
    // per-element code in the same order: the same bits in every column.
    for (const char* algorithm :
         {"--set 'algorithm={name: ad-psgd, lr: 0.05, momentum: 0.9, split: none}'",
          "--set 'algorithm={name: asgd, lr: 0.01, momentum: 0.5}'",
          "--set 'algorithm={name: dc-asgd, lr: 0.01, momentum: 0.5, variant: adaptive}'",
          "--set 'algorithm={name: gsgm, lr: 0.001, momentum: 0.9}'",
          "--set 'algorithm={name: swarm-sgd, lr: 0.05, momentum: 0.9, compressor: {kind: lattice, "
          "bits: 4, side: 0.02, rounding: stochastic, error_feedback: true}}'"}) {
      CAPTURE(algorithm);
      const std::string settings = std::string("--set stop.epochs=0.5 ") + algorithm;
      const TraceContents programs =
          run("cuda-resident", "programs", "scenarios/quickstart.yaml", settings);
      const TraceContents each =
          run_where("DTSIM_CUDA_VECTOR_PROGRAMS", "0", "cuda-resident", "each", settings);
      CHECK(each.text_attributes.at("gradient_backend").find("a kernel per element-wise step") !=
            std::string::npos);
      CHECK(programs.text_attributes.at("gradient_backend").find("element-wise") ==
            std::string::npos);
      // The same steps either way; as programs they ran in fewer kernels (AD-PSGD averages
      // a pair's two models, ASGD steps the server after its pull, ...), each on its own
      // in one kernel per step.
      const auto& p = programs.number_attributes;
      const auto& e = each.number_attributes;
      CHECK(e.at("device_element_wise_steps") > 0);
      CHECK(p.at("device_element_wise_steps") == e.at("device_element_wise_steps"));
      CHECK(e.at("device_element_wise_kernels") == e.at("device_element_wise_steps"));
      CHECK(p.at("device_element_wise_kernels") < p.at("device_element_wise_steps"));
      check_same_columns(programs, each);
    }
  }

  // No semicolon in a test's name: CTest's discovery would split it in two.
  TEST_CASE("CUDA: the set-up preload (on by default, off with DTSIM_CUDA_PRELOAD=0) changes no "
            "bit of a run") {
    if (!have_device())
      return;
    // The kernels loaded and a warm-up pass of the 16 nodes run before the run's clock
    // (DeviceBatchRunner::prepare_before_the_run): the MLP's and LeNet's quickstart, a quarter
    // of an epoch, the same bits in every column as where each kernel loads at its first launch.
    for (const char* model : {"", "--set 'model={kind: lenet}'"}) {
      CAPTURE(model);
      const std::string settings = std::string("--set stop.epochs=0.25 ") + model;
      const TraceContents lazy =
          run_where("DTSIM_CUDA_PRELOAD", "0", "cuda-resident", "lazy", settings);
      const TraceContents prepared =
          run("cuda-resident", "prepared", "scenarios/quickstart.yaml", settings);
      const std::string backend = prepared.text_attributes.at("gradient_backend");
      CAPTURE(backend);
      CHECK(backend.find(" kernels loaded and a pass of 16 nodes run before the run") !=
            std::string::npos);
      CHECK(backend.find("before the run (") == std::string::npos); // nothing failed
      CHECK(lazy.text_attributes.at("gradient_backend").find("before the run") ==
            std::string::npos);
      check_same_columns(prepared, lazy);
    }
  }

  TEST_CASE("CUDA: cuda-resident CHOCO-SGD and SwarmSGD match cpu-resident with QSGD, top-k, "
            "sign") {
    if (!have_device())
      return;
    // The compression on the device (device_compression.cuh's forms): QSGD by buckets at 8
    // bits with the device's own counter-based draws (not the host's stream: the same
    // distribution, other numbers), top-k (the device's radix selection) and sign (its mean
    // magnitude), which draw nothing. CHOCO-SGD compresses its x_half - xhat there (x_half,
    // the public estimates and their sums on the device); SwarmSGD its public models, a block
    // per message. QSGD by buckets of 8 and 5 (5 does not divide the row: a partial last
    // bucket) runs a thread per bucket, and SwarmSGD's error feedback keeps a residual per
    // node on the device. SwarmSGD's QSGD draws on the host come from the node's stream,
    // which also picks its partners: on the device they do not, so that run takes other
    // partners than the CPU's. Half an epoch each.
    //
    // None of these runs is the CPU's bit for bit: other draws, and top-k and sign flip
    // where a fused multiply-add moves a coordinate across a tie or zero; from there the
    // trajectories part. So the final accuracy is allowed 4 sqrt(2) of the CPU's seed-to-seed
    // spread (the sample std of 12 seeds, compressed_spread.yaml; run 18 on an H100 found
    // gaps of 0.74, 3.43 and 0.58 points for CHOCO top-k, SwarmSGD QSGD and SwarmSGD top-k
    // with error feedback, whose spreads are 0.74, 1.51 and 2.03), and the quantization
    // error, the same quantity, within 5% of the host's (for QSGD from other draws; 10% for
    // SwarmSGD's, whose partners differ).
    struct Case {
      const char* method;
      const char* compressor;
      double spread, error_gap;
    };
    const char* choco = "choco-sgd, lr: 0.05, momentum: 0.9, gamma: 0.6";
    const char* swarm = "swarm-sgd, lr: 0.05, momentum: 0.9";
    for (const Case& c :
         {Case{choco, "{kind: qsgd, bits: 8}", 0.0079, 0.05},
          Case{choco, "{kind: topk, ratio: 0.1}", 0.0074, 0.05},
          Case{choco, "{kind: sign}", 0.0109, 0.05},
          Case{choco, "{kind: qsgd, bits: 8, bucket: 8}", 0.0091, 0.05},
          Case{choco, "{kind: qsgd, bits: 8, bucket: 5}", 0.0081, 0.05},
          Case{swarm, "{kind: qsgd, bits: 8}", 0.0151, 0.10},
          Case{swarm, "{kind: qsgd, bits: 8, bucket: 8}", 0.0153, 0.10},
          Case{swarm, "{kind: topk, ratio: 0.1}", 0.0274, 0.05},
          Case{swarm, "{kind: sign}", 0.0339, 0.05},
          Case{swarm, "{kind: topk, ratio: 0.1, error_feedback: true}", 0.0203, 0.05}}) {
      CAPTURE(std::string(c.method));
      CAPTURE(std::string(c.compressor));
      const auto [cpu, gpu] = check_resident_twin(
          std::string("--set 'algorithm={name: ") + c.method + ", compressor: " + c.compressor +
              "}'",
          {"quantization_error", "consensus_distance"}, 4 * std::sqrt(2.0) * c.spread);
      CHECK(cpu.metrics.at("quantization_error_rel").back() > 0);
      CHECK(relative_gap(gpu, cpu, "quantization_error_rel") < c.error_gap);
    }
  }

  TEST_CASE("CUDA: without a device, every cuda backend is refused before the run with exit 2") {
    const std::string why = cuda::unavailable_reason();
    if (why.empty()) {
      MESSAGE("SKIPPED: a CUDA device is present");
      return;
    }
    for (const char* backend : {"cuda", "cuda-batched", "cuda-resident"}) {
      CAPTURE(backend);
      const auto r = run_cli("run scenarios/quickstart.yaml --quiet -o /nonexistent/x.h5 "
                             "--set model.backend=" +
                             std::string(backend));
      CHECK(r.exit_code == 2);
      CHECK(r.output.find("no CUDA device found") != std::string::npos);
      CHECK(std::count(r.output.begin(), r.output.end(), '\n') == 1);
    }
  }
}
