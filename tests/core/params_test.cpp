// SPDX-License-Identifier: MIT
// Params: typed reads, defaults written back, precise errors, unknown-key detection.
#include "sim/core/errors.hpp"
#include "sim/core/params.hpp"
#include "support/config_error.hpp"

#include <doctest/doctest.h>
#include <memory>

using namespace dtsim;

namespace {
std::shared_ptr<ParamNode> sample_tree() {
  auto root = std::make_shared<ParamNode>(ParamNode::make_map(1));
  ParamNode alg = ParamNode::make_map(3);
  alg.fields.emplace_back("name", ParamNode::make_scalar("dsgd", 4));
  alg.fields.emplace_back("lr", ParamNode::make_scalar("-0.1", 5));
  alg.fields.emplace_back("momentun", ParamNode::make_scalar("0.9", 6));
  root->fields.emplace_back("algorithm", alg);
  root->fields.emplace_back("nodes", ParamNode::make_scalar("16", 2));
  return root;
}

} // namespace

TEST_SUITE("core") {
  TEST_CASE("Params: typed reads and defaults are written into the tree") {
    Params p(sample_tree(), "s.yaml");
    CHECK(p.integer("nodes", 1, Range::positive()) == 16);
    CHECK(p.number("seed", 3.0) == 3.0);
    CHECK(p.node().find("seed")->scalar == "3");
    Params alg = p.child("algorithm");
    CHECK(alg.text("name") == "dsgd");
    CHECK(alg.path() == "algorithm");
  }

  TEST_CASE("Params: out-of-range value names file, line, key and expectation") {
    Params p(sample_tree(), "s.yaml");
    const std::string e = testing::config_error_of(
        [&] { p.child("algorithm").number("lr", 0.1, Range::positive()); });
    CHECK(e == "s.yaml:5: algorithm.lr: expected a number > 0, got -0.1");
  }

  TEST_CASE("Params: wrong type and required keys") {
    Params p(sample_tree(), "s.yaml");
    CHECK(testing::config_error_of([&] {
            p.child("algorithm").number("name");
          }).find("expected a number") != std::string::npos);
    CHECK(testing::config_error_of([&] { p.text("missing"); }).find("required key is missing") !=
          std::string::npos);
    CHECK(testing::config_error_of([&] { p.child("nodes"); }).find("expected a map") !=
          std::string::npos);
    CHECK(testing::config_error_of([&] {
            p.integer("nodes", 1, Range::between(1, 8));
          }).find("in [1, 8]") != std::string::npos);
  }

  TEST_CASE("Params: NaN and non-integers are rejected") {
    auto root = std::make_shared<ParamNode>(ParamNode::make_map(1));
    root->fields.emplace_back("a", ParamNode::make_scalar(".nan", 2));
    root->fields.emplace_back("b", ParamNode::make_scalar("2.5", 3));
    Params p(root, "f.yaml");
    CHECK(testing::config_error_of([&] { p.number("a", 1.0); }).find("f.yaml:2: a:") == 0);
    CHECK(testing::config_error_of([&] { p.integer("b", 1); }).find("expected an integer") !=
          std::string::npos);
  }

  TEST_CASE("Params: unread keys are reported with a suggestion") {
    Params p(sample_tree(), "s.yaml");
    p.integer("nodes", 1);
    Params alg = p.child("algorithm");
    alg.text("name");
    alg.number("lr", 0.1);
    alg.number("momentum", 0.0);
    const std::string e = testing::config_error_of([&] { p.reject_unused(); });
    CHECK(
        e.find("s.yaml:6: algorithm.momentun: unknown key 'momentun' (did you mean 'momentum'?)") ==
        0);
  }

  TEST_CASE("Params: choice suggests the closest valid name") {
    auto root = std::make_shared<ParamNode>(ParamNode::make_map(1));
    root->fields.emplace_back("kind", ParamNode::make_scalar("rign", 2));
    Params p(root, "t.yaml");
    const std::string e = testing::config_error_of([&] {
      p.choice("kind", "ring", {"ring", "torus", "complete"});
    });
    CHECK(e == "t.yaml:2: kind: unknown name 'rign' (did you mean 'ring'?); expected one of: ring, "
               "torus, complete");
  }

  TEST_CASE("Params: lists of numbers") {
    auto root = std::make_shared<ParamNode>(ParamNode::make_map(1));
    ParamNode list;
    list.kind = ParamNode::Kind::List;
    list.items = {ParamNode::make_scalar("256"), ParamNode::make_scalar("128")};
    root->fields.emplace_back("hidden", list);
    Params p(root, "m.yaml");
    CHECK(p.numbers("hidden", {}, Range::positive()) == std::vector<double>{256, 128});
    CHECK(p.numbers("other", {1, 2}) == std::vector<double>{1, 2});
    CHECK(p.node().find("other")->items.size() == 2);
  }

  TEST_CASE("format_number round-trips") {
    for (double x : {0.1, 1e-7, 3.0, 0.05, 123456.789, 1.0 / 3.0})
      CHECK(std::strtod(format_number(x).c_str(), nullptr) == x);
    CHECK(format_number(0.1) == "0.1");
  }
}
