// SPDX-License-Identifier: MIT
// Sweep files: grid expansion, stable names, explicit points, shards, errors.
#include "sim/core/errors.hpp"
#include "sim/scenario/sweep_plan.hpp"
#include "sim/scenario/yaml_tree.hpp"

#include <doctest/doctest.h>
#include <filesystem>
#include <fstream>
#include <set>
#include <unistd.h>

using namespace dtsim;

namespace {

std::string write_sweep(const std::string& text) {
  // One folder per process: CTest runs the test cases in parallel.
  const auto dir = std::filesystem::temp_directory_path() /
                   ("dtsim_sweep_plan_test_" + std::to_string(getpid()));
  std::filesystem::create_directories(dir);
  std::ofstream(dir / "base.yaml") << "nodes: 4\n";
  std::ofstream(dir / "s.yaml") << text;
  return (dir / "s.yaml").string();
}

std::string error_of(const std::string& text) {
  try {
    plan_sweep(write_sweep(text));
  } catch (const ConfigError& e) {
    return e.what();
  }
  return "(no error)";
}

const char* kDemoSweep = R"(
name: demo
base: base.yaml
grid:
  nodes: [8, 16]
  algorithm.name: [dsgd, asgd]
  data.partition: [{kind: iid}, {kind: dirichlet, alpha: 0.1}]
labels: {data.partition: part}
)";

} // namespace

TEST_SUITE("scenario") {
  TEST_CASE("plan_sweep: the grid is a cartesian product, first key slowest, stable names") {
    const SweepPlan p = plan_sweep(write_sweep(kDemoSweep));
    CHECK(p.name == "demo");
    CHECK(p.output_dir == "runs/demo"); // the default: relative to the current folder
    // A written output, like every path in a file, is relative to the sweep file.
    const std::string moved =
        plan_sweep(write_sweep(std::string(kDemoSweep) + "output: out/here\n")).output_dir;
    CHECK(moved ==
          (std::filesystem::path(write_sweep(kDemoSweep)).parent_path() / "out/here").string());
    CHECK(p.base_scenario.ends_with("/base.yaml"));
    REQUIRE(p.points.size() == 8);
    CHECK(p.points[0].name == "nodes=8_algorithm=dsgd_part=kind-iid");
    CHECK(p.points[1].name == "nodes=8_algorithm=dsgd_part=kind-dirichlet-alpha-0.1");
    CHECK(p.points[7].name == "nodes=16_algorithm=asgd_part=kind-dirichlet-alpha-0.1");
    CHECK(p.points[1].overrides ==
          std::vector<std::string>{
              "nodes=8", "algorithm.name=dsgd", "data.partition={kind: dirichlet, alpha: 0.1}",
              "name=demo_nodes=8_algorithm=dsgd_part=kind-dirichlet-alpha-0.1"});
    // The same file expands to the same points.
    const SweepPlan again = plan_sweep(write_sweep(kDemoSweep));
    for (std::size_t i = 0; i < p.points.size(); ++i)
      CHECK(again.points[i].name == p.points[i].name);
  }

  TEST_CASE("plan_sweep: explicit points are crossed with the grid") {
    const SweepPlan p = plan_sweep(write_sweep(R"(
base: base.yaml
grid: {seed: [1, 2, 3]}
points:
  - {algorithm.name: asgd, algorithm.lr: 0.05}
  - {algorithm.name: gsgm, algorithm.lr: 0.001}
)"));
    REQUIRE(p.points.size() == 6);
    CHECK(p.points[0].name == "seed=1_algorithm=asgd_lr=0.05");
    CHECK(p.points[5].name == "seed=3_algorithm=gsgm_lr=0.001");
  }

  TEST_CASE("plan_sweep: set: fixes overrides for every point, outside the names") {
    const SweepPlan p = plan_sweep(write_sweep(R"(
base: base.yaml
set: {stop.epochs: 4, data.partition: {kind: iid}}
grid: {seed: [1, 2]}
)"));
    REQUIRE(p.points.size() == 2);
    CHECK(p.points[1].name == "seed=2");
    CHECK(p.points[1].overrides == std::vector<std::string>{"stop.epochs=4",
                                                            "data.partition={kind: iid}", "seed=2",
                                                            "name=" + p.name + "_seed=2"});
    CHECK_THROWS_WITH_AS(plan_sweep(write_sweep("base: base.yaml\nset: [1]\ngrid: {seed: [1]}\n")),
                         doctest::Contains("set: expected a map of dotted keys"), ConfigError);
  }

  TEST_CASE("plan_sweep: a quoted value stays a quoted string in the point's override") {
    const SweepPlan p = plan_sweep(write_sweep(R"(
base: base.yaml
grid:
  algorithm.lr: ["0.1"]
  label: ["a, b: \"c\"\t\\ \x01"]
)"));
    REQUIRE(p.points.size() == 1);
    CHECK(p.points[0].overrides[0] == "algorithm.lr=\"0.1\"");
    // The name shows the text, not its escapes.
    CHECK(p.points[0].name == "lr=0.1_label=a-b-c");
    // Read back as --set reads it: the same strings, still quoted (so "0.1" is refused
    // where a number is read), the label one string, not a flow list or map.
    auto tree = parse_yaml_text("name: t\n", "s.yaml");
    apply_override(*tree, p.points[0].overrides[0]);
    apply_override(*tree, p.points[0].overrides[1]);
    const ParamNode* lr = tree->find("algorithm")->find("lr");
    CHECK(lr->scalar == "0.1");
    CHECK(lr->quoted);
    const ParamNode* label = tree->find("label");
    REQUIRE(label->kind == ParamNode::Kind::Scalar);
    CHECK(label->scalar == "a, b: \"c\"\t\\ \x01");
    CHECK(label->quoted);
  }

  TEST_CASE("plan_sweep: points: {from: ...} takes another sweep file's points") {
    const std::string first = write_sweep(R"(
base: base.yaml
grid: {seed: [1]}
points:
  - {algorithm.name: asgd, algorithm.lr: 0.05}
  - {algorithm.name: gsgm, algorithm.lr: 0.001}
)");
    const auto dir = std::filesystem::path(first).parent_path();
    std::filesystem::rename(first, dir / "methods.yaml");
    const SweepPlan p = plan_sweep(write_sweep(R"(
base: base.yaml
grid: {nodes: [8, 64]}
points: {from: methods.yaml}
)"));
    REQUIRE(p.points.size() == 4);
    CHECK(p.points[0].name == "nodes=8_algorithm=asgd_lr=0.05");
    CHECK(p.points[3].name == "nodes=64_algorithm=gsgm_lr=0.001");
    CHECK(error_of("base: base.yaml\npoints: {from: nothere.yaml}\n")
              .find("s.yaml:2: points.from: no such sweep file") != std::string::npos);
    CHECK(error_of("base: base.yaml\npoints: {from: base.yaml}\n")
              .find("base.yaml has no list of points") != std::string::npos);
    CHECK(error_of("base: base.yaml\npoints: {from: methods.yaml, form: x}\n")
              .find("unknown key 'form'") != std::string::npos);
  }

  TEST_CASE("shard: shards are disjoint and cover the points") {
    SweepPlan p = plan_sweep(write_sweep("base: base.yaml\ngrid: {seed: [1, 2, 3, 4, 5, 6, 7]}\n"));
    std::multiset<std::string> seen;
    for (int k = 1; k <= 3; ++k)
      for (const SweepPoint& pt : shard(p.points, k, 3))
        seen.insert(pt.name);
    CHECK(seen.size() == 7);
    CHECK(std::set<std::string>(seen.begin(), seen.end()).size() == 7);
    CHECK(shard(p.points, 1, 3).size() == 3);
    CHECK(shard(p.points, 3, 3).size() == 2);
  }

  TEST_CASE("plan_sweep: bad sweep files are one-line errors") {
    CHECK(error_of("base: base.yaml\ngrid: {seed: []}\n")
              .find("grid.seed: expected a non-empty list") != std::string::npos);
    CHECK(error_of("base: base.yaml\ngird: {seed: [1]}\n")
              .find("unknown key 'gird' (did you mean 'grid'?)") != std::string::npos);
    CHECK(error_of("base: nothere.yaml\ngrid: {seed: [1]}\n").find("no such scenario file") !=
          std::string::npos);
    // Found by fuzz_sweep in CI: a name longer than the OS allows made std::filesystem throw
    // (an uncaught filesystem_error) instead of reporting the missing file.
    CHECK(error_of("base: " + std::string(300, 'q') + ".yaml\ngrid: {seed: [1]}\n")
              .find("no such scenario file") != std::string::npos);
    CHECK(error_of("base: base.yaml\n").find("a sweep needs a grid or points") !=
          std::string::npos);
    CHECK(error_of("base: base.yaml\ngrid: {x: [a b, a-b]}\n").find("both named") !=
          std::string::npos);
  }

  TEST_CASE(
      "plan_sweep: a label for no swept key, and set: values the points replace, are refused") {
    CHECK(error_of("base: base.yaml\ngrid: {nodes: [2, 4]}\nlabels: {nodez: n}\n")
              .find(":3: labels.nodez: no grid axis, point or tune key is nodez (the swept keys: "
                    "nodes)") != std::string::npos);
    CHECK(error_of("base: base.yaml\nset:\n  nodes: 3\ngrid: {nodes: [2]}\n")
              .find(":3: set.nodes: every point sets nodes itself, which replaces this value") !=
          std::string::npos);
    // A point's whole section replaces a key set: gave inside it.
    CHECK(error_of("base: base.yaml\nset: {algorithm.lr: 0.1}\n"
                   "points: [{algorithm: {name: dsgd}}]\n")
              .find("set.algorithm.lr: every point sets algorithm itself") != std::string::npos);
    // set: is the default of the points that do not set the key: allowed.
    CHECK(error_of("base: base.yaml\nset: {algorithm.lr: 0.1}\n"
                   "points: [{algorithm.lr: 0.2}, {algorithm.momentum: 0.5}]\n") == "(no error)");
    // Empty sections are empty, not unknown keys.
    CHECK(error_of("base: base.yaml\nset:\ngrid: {nodes: [2]}\n") == "(no error)");
    // The other way round a point refines what set: gave: allowed.
    CHECK(error_of("base: base.yaml\nset: {algorithm: {name: dsgd}}\n"
                   "points: [{algorithm.lr: 0.1}]\n") == "(no error)");
  }
}
