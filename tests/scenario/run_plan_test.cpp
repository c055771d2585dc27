// SPDX-License-Identifier: MIT
// plan_run: every bad input gives one line naming file, line, key and the expectation.
#include "sim/core/errors.hpp"
#include "sim/scenario/run_plan.hpp"

#include <doctest/doctest.h>
#include <filesystem>
#include <fstream>

using namespace dtsim;

namespace {

const std::string kBase = R"(name: t
nodes: 4
data:
  dataset: synthetic
  synthetic: {features: 8, classes: 3, train: 400, test: 100}
  partition: {kind: iid}
model: {kind: softmax}
topology: {kind: ring}
algorithm: {name: dsgd, lr: 0.1}
stop: {epochs: 1}
)";

std::string error_of(const std::string& yaml, std::vector<std::string> sets = {}) {
  try {
    plan_run_text(yaml, "s.yaml", sets);
  } catch (const ConfigError& e) {
    const std::string m = e.what();
    CHECK(m.find('\n') == std::string::npos); // one line
    return m;
  }
  return "(no error)";
}

} // namespace

TEST_SUITE("scenario") {
  TEST_CASE("plan_run: a valid scenario resolves every default") {
    RunPlan p = plan_run_text(kBase, "s.yaml", {});
    CHECK(p.topology->size() == 4);
    CHECK(p.partition.node_indices.size() == 4);
    CHECK(p.resolved_yaml.find("weight_decay: 0") != std::string::npos);
    CHECK(p.resolved_yaml.find("latency_s: 0.001") != std::string::npos);
    // Evaluation follows progress by default: 20 per epoch, whatever the node count.
    CHECK(p.resolved_yaml.find("every_epochs: 0.05") != std::string::npos);
    CHECK(p.output_path == "runs/t.h5");
    // The resolved scenario reproduces itself.
    RunPlan again = plan_run_text(p.resolved_yaml, "resolved.yaml", {});
    CHECK(again.resolved_yaml == p.resolved_yaml);
  }

  TEST_CASE("plan_run: unknown keys, with a suggestion") {
    CHECK(error_of(kBase + "stopp: {epochs: 1}\n") ==
          "s.yaml:11: stopp: unknown key 'stopp' (did you mean 'stop'?); known keys here: name, "
          "label, seed, nodes, data, model, topology, algorithm, system, stop, eval, output");
    CHECK(error_of(kBase, {"algorithm.momentun=0.9"})
              .find("--set algorithm.momentun: unknown key "
                    "'momentun' (did you mean 'momentum'?)") == 0);
  }

  TEST_CASE("plan_run: impossible values") {
    CHECK(error_of(kBase, {"algorithm.lr=-0.1"}) ==
          "--set algorithm.lr: expected a number > 0, got -0.1");
    CHECK(error_of(kBase, {"algorithm.lr=.nan"}).find("expected a number > 0") !=
          std::string::npos);
    CHECK(error_of(kBase, {"nodes=0"}).find("nodes: expected a number in [1, 1000000], got 0") !=
          std::string::npos);
    CHECK(error_of(kBase, {"data.batch_size=0"}).find("data.batch_size") != std::string::npos);
    CHECK(error_of(kBase, {"algorithm.lr=fast"}).find("expected a number > 0, got 'fast'") !=
          std::string::npos);
    CHECK(error_of(kBase, {"stop={}"}).find("no stop rule") != std::string::npos);
    // Such errors point at a key the scenario wrote, not at a default it never saw.
    CHECK(error_of(kBase, {"stop={steps: 0}"}).find("--set stop.steps: no stop rule") == 0);
    CHECK(error_of(kBase, {"eval={every_updates: 0}"})
              .find("--set eval.every_updates: no evaluation rule") == 0);
    // A list of maps left empty is an empty list (a stored scenario may say `failures: ~`).
    CHECK(error_of(kBase, {"system.compute={dist: normal, failures: ~}"}) == "(no error)");
    // Pairwise methods need a peer.
    CHECK(error_of(kBase, {"nodes=1", "algorithm.name=ad-psgd"}) ==
          "--set algorithm.name: ad-psgd averages each step with a neighbour: expected nodes >= 2");
    CHECK(error_of(kBase, {"nodes=1", "algorithm.name=swarm-sgd"}).find("expected nodes >= 2") !=
          std::string::npos);
    CHECK(error_of(kBase, {"nodes=401"}) ==
          "--set nodes: expected at most one node per training example (400 here), got 401");
    CHECK(error_of(kBase, {"eval.test_samples=101"}) ==
          "--set eval.test_samples: expected at most the test split's 100 examples (0 = all), "
          "got 101");
    CHECK(error_of(kBase, {"algorithm.lr_schedule={decay_factor: 0.5}"}) ==
          "--set algorithm.lr_schedule.decay_factor: a decay factor without milestones does "
          "nothing: give decay_at (fractions of the budget) or decay_epochs");
    // A resolved scenario (which writes the defaults out) reads back.
    const RunPlan warm = plan_run_text(
        kBase, "s.yaml", {"algorithm.lr_schedule={warmup_epochs: 0.5, warmup_from: 0.01}"});
    CHECK(error_of(warm.resolved_yaml) == "(no error)");
    // Spans past what the nanosecond clock holds over a run (it ends at 9.2e9 s) are refused;
    // a drawn time past it stops the run with one line instead of wrapping the clock.
    CHECK(error_of(kBase, {"system.network.latency_s=1e10"}) ==
          "--set system.network.latency_s: expected a number in [0, 1000000000], got 1e10");
    CHECK(error_of(kBase, {"stop={epochs: 1, sim_time_s: 1e10}"}) ==
          "--set stop.sim_time_s: expected a number in [0, 1000000000], got 1e10");
    CHECK(error_of(kBase, {"system.compute.mean_s=1e-300"}) ==
          "--set system.compute.mean_s: expected a number in [1e-09, 1000000000], got 1e-300");
    // An interval the nanosecond clock rounds to nothing would never let the run move on.
    CHECK(error_of(kBase, {"eval={every_s: 1e-10}"}) ==
          "--set eval.every_s: expected 0 (off) or at least 1e-6, got 1e-10");
    CHECK(error_of(kBase, {"eval={every_epochs: 1e-9}"}) ==
          "--set eval.every_epochs: expected 0 (off) or at least 1e-6, got 1e-09");
  }

  TEST_CASE("plan_run: unknown names suggest the closest") {
    CHECK(error_of(kBase, {"algorithm.name=dsdg"})
              .find("unknown name 'dsdg' (did you mean 'dsgd'?)") != std::string::npos);
  }

  TEST_CASE("plan_run: mixing weights a time-varying topology would not use are refused") {
    CHECK(error_of(kBase, {"topology={kind: random_pairs, mixing: uniform}"}) ==
          "--set topology.mixing: not used by random_pairs: its rounds average pairs with "
          "weights 1/2; remove topology.mixing or use a static kind");
    CHECK(error_of(kBase, {"topology={kind: one_peer_exponential, mixing: {kind: file, path: "
                           "W.csv}}"})
              .find("topology.mixing: not used by one_peer_exponential") != std::string::npos);
    // What a resolved scenario of such a run says (the union's weights) still reads back.
    CHECK(error_of(kBase, {"topology={kind: random_pairs, mixing: metropolis}"}) == "(no error)");
    CHECK(error_of(kBase, {"topology={kind: random_pairs, mixing: {kind: metropolis}}"}) ==
          "(no error)");
  }

  TEST_CASE("plan_run: per_node_samples without per-node evaluations is refused") {
    CHECK(error_of(kBase + "eval: {every_epochs: 0.5, per_node_samples: 50}\n") ==
          "s.yaml:11: eval.per_node_samples: applies to per-node evaluations only: set "
          "eval.per_node: true, or remove eval.per_node_samples (or leave it at 1000)");
    CHECK(error_of(kBase + "eval: {every_epochs: 0.5, per_node: true, per_node_samples: 50}\n") ==
          "(no error)");
    // The default, as every resolved scenario writes it, still reads back.
    CHECK(
        error_of(kBase + "eval: {every_epochs: 0.5, per_node: false, per_node_samples: 1000}\n") ==
        "(no error)");
  }

  TEST_CASE("plan_run: a disconnected graph is refused") {
    const std::string e = error_of(kBase, {"nodes=20", "topology={kind: erdos_renyi, p: 0.01}"});
    CHECK(e.find("disconnected") != std::string::npos);
  }

  TEST_CASE("plan_run: synthetic data can be image-shaped, for the CNNs") {
    const RunPlan p =
        plan_run_text(kBase, "s.yaml",
                      {"data.synthetic={image: [1, 16, 16], classes: 3, train: 400, test: 100}",
                       "model.kind=lenet"});
    CHECK(p.data->train.shape == std::vector<int>{1, 16, 16});
    CHECK(p.describe_model().find("lenet 1x16x16") == 0);
    // The resolved scenario writes features: 256 beside the image, and reads back.
    CHECK(p.resolved_yaml.find("features: 256") != std::string::npos);
    CHECK(plan_run_text(p.resolved_yaml, "resolved.yaml", {}).resolved_yaml == p.resolved_yaml);
    CHECK(error_of(kBase, {"data.synthetic.image=[1, 16, 16]"})
              .find("data.synthetic.features: 8 values disagree with image 1x16x16 (256 "
                    "values); give one of them") != std::string::npos);
    CHECK(error_of(kBase, {"data.synthetic={image: [3, 60000, 60000]}"})
              .find("data.synthetic.image: more than 2e9 values per example") != std::string::npos);
    CHECK(error_of(kBase, {"data.synthetic={image: [16, 16]}"})
              .find("data.synthetic.image: expected [channels, height, width]") !=
          std::string::npos);
  }

  TEST_CASE("plan_run: a user's arrays file: its keys are read before the file is opened") {
    const std::vector<std::string> arrays = {"data.dataset=arrays", "data.synthetic={}"};
    auto with = [&](const std::string& set) {
      std::vector<std::string> sets = arrays;
      sets.push_back(set);
      return error_of(kBase, sets);
    };
    CHECK(with("data.arrays={file: /nonexistent.npz, classes: -1}")
              .find("data.arrays.classes: expected a number in [0, 1048576], got -1") !=
          std::string::npos);
    CHECK(with("data.arrays={file: /nonexistent.npz, classes: 3}")
              .find("/nonexistent.npz: no such file or folder") != std::string::npos);
  }

  TEST_CASE("plan_run: missing data names the Debian package") {
    const std::string e = error_of(
        kBase, {"data.dataset=fashion-mnist", "data.path=/nonexistent", "data.synthetic={}"});
    CHECK(e.find("dataset-fashion-mnist") != std::string::npos);
  }

  TEST_CASE("plan_run: absurd sizes are refused before allocating") {
    const std::string e = error_of(kBase, {"nodes=4000", "model={kind: mlp, hidden: [4096, 4096]}",
                                           "topology.kind=complete", "data.synthetic.train=8000"});
    CHECK(e.find("limit is 16 GiB") != std::string::npos);
  }

  TEST_CASE("plan_run: host memory counts a resident backend's vectors where they are") {
    // A 4.2 M-parameter MLP (16.9 MB a vector) on synthetic data; checking plans, so that no
    // device is needed: what counts is the host memory check alone.
    const auto refused = [](std::vector<std::string> sets) {
      sets.insert(sets.begin(), {"model={kind: mlp, hidden: [2048, 2048]}",
                                 "data.synthetic.train=8000", "eval.every_epochs=0.5"});
      try {
        plan_run_text(kBase, "s.yaml", sets, PlanUse::check);
      } catch (const ConfigError& e) {
        const std::string m = e.what();
        CHECK(m.find("--set nodes: this run would need about") != std::string::npos);
        CHECK(m.find("limit is 16 GiB") != std::string::npos);
        return true;
      }
      return false;
    };
    // 1,100 nodes: the node models alone are 18.6 GB on the host, none on cuda-resident,
    // unless the epoch probe pulls them.
    // Backend cuda keeps them on the device where they fit (counted as cuda-resident until
    // the device says they do not), cuda-batched on the host.
    CHECK(refused({"nodes=1100", "model.backend=cpu-batched"}));
    CHECK(refused({"nodes=1100", "model.backend=cuda-batched"}));
    CHECK_FALSE(refused({"nodes=1100", "model.backend=cuda-resident"}));
    CHECK_FALSE(refused({"nodes=1100", "model.backend=cuda"}));
    CHECK(refused({"nodes=1100", "model.backend=cuda-resident", "eval.per_epoch=true"}));
    // The refusal names the backend that would keep them off the host.
    const std::string why =
        error_of(kBase, {"model={kind: mlp, hidden: [2048, 2048]}", "data.synthetic.train=8000",
                         "nodes=1100", "model.backend=cpu-batched"});
    CHECK(why.find("(on a GPU, backend cuda keeps the node vectors there where they fit)") !=
          std::string::npos);
    const std::string batched =
        error_of(kBase, {"model={kind: mlp, hidden: [2048, 2048]}", "data.synthetic.train=8000",
                         "nodes=1100", "model.backend=cuda-batched"});
    CHECK(batched.find("limit is 16 GiB") != std::string::npos);
    CHECK(batched.find("on a GPU") == std::string::npos);
    // 250 nodes: cpu-batched's 3 vectors per node fit, cpu-resident's 5 (its own) do not.
    CHECK_FALSE(refused({"nodes=250", "model.backend=cpu-batched"}));
    CHECK(refused({"nodes=250", "model.backend=cpu-resident"}));
    // 150 nodes on cpu-resident: DSGD's 5 vectors per node fit, gradient tracking's 9 do not
    // (checked again once the method says how many it keeps there).
    CHECK_FALSE(refused({"nodes=150", "model.backend=cpu-resident"}));
    CHECK(refused(
        {"nodes=150", "model.backend=cpu-resident", "algorithm={name: gradient-tracking}"}));
  }

  TEST_CASE("plan_run: a user's mixing matrix from a file replaces the built-in weights") {
    const auto dir = std::filesystem::temp_directory_path() / "dtsim-mixing-file-test";
    std::filesystem::create_directories(dir);
    // Metropolis weights of the 4-ring, written out: the plan must get the same W.
    std::ofstream(dir / "W.csv") << "# ring of 4\n"
                                    "0.3333333333333333 0.3333333333333333 0 0.3333333333333333\n"
                                    "0.3333333333333333,0.3333333333333333,0.3333333333333333,0\n"
                                    "0 0.3333333333333333 0.3333333333333333 0.3333333333333333\n"
                                    "0.3333333333333333 0 0.3333333333333333 0.3333333333333333\n";
    std::string with_file = kBase;
    const std::string ring = "topology: {kind: ring}";
    with_file.replace(with_file.find(ring), ring.size(),
                      "topology: {kind: ring, mixing: {kind: file, path: W.csv}}");
    std::ofstream(dir / "s.yaml") << with_file; // W.csv resolves against the scenario's folder
    const RunPlan metropolis = plan_run_text(kBase, "t.yaml", {});
    const RunPlan file = plan_run((dir / "s.yaml").string(), {});
    CHECK(file.topology->mixing_matrix() == metropolis.topology->mixing_matrix());
    CHECK(file.topology->spectral_gap() == metropolis.topology->spectral_gap());
    CHECK(file.resolved_yaml.find("kind: file") != std::string::npos);

    std::ofstream(dir / "bad.csv") << "0.5 0.5 0 0\n0.5 0.5 0 0\n0 0 0.5 0.5\n0 0 0.5 0.5\n";
    const std::string bad =
        error_of(kBase, {"topology.mixing={kind: file, path: " + (dir / "bad.csv").string() + "}"});
    CHECK(bad.find("topology.mixing.path: ") != std::string::npos);
    CHECK(bad.find("bad.csv: W(0,1) = 0.5 but 0 -- 1") == std::string::npos); // 0-1 is an edge
    CHECK(bad.find("W(0,3) = 0 on the edge 0 -- 3") != std::string::npos);
    CHECK(error_of(kBase, {"topology.mixing={kind: file, path: /nonexistent.csv}"})
              .find("cannot open /nonexistent.csv") != std::string::npos);
    CHECK(error_of(kBase, {"topology.mixing={kind: file}"}).find("required key is missing") !=
          std::string::npos);
    std::filesystem::remove_all(dir);
  }
}
