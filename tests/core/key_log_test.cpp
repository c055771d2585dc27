// SPDX-License-Identifier: MIT
// KeyLog: Params reads are recorded only inside a Scope, once each, with type, default,
// range and allowed names; list items share one path.
#include "sim/core/key_log.hpp"

#include <doctest/doctest.h>
#include <memory>

using namespace dtsim;

namespace {
const KeyRead* find(const KeyLog& log, const std::string& path) {
  for (const KeyRead& r : log.reads())
    if (r.path == path)
      return &r;
  return nullptr;
}
} // namespace

TEST_SUITE("core") {
  TEST_CASE("KeyLog: reads outside a scope are not recorded") {
    KeyLog log;
    Params p;
    p.number("lr", 0.1, Range::positive());
    CHECK(log.reads().empty());
    {
      const KeyLog::Scope scope(log);
      p.number("lr", 0.1, Range::positive());
    }
    p.integer("nodes", 4);
    REQUIRE(log.reads().size() == 1);
    CHECK(log.reads()[0].path == "lr");
  }

  TEST_CASE("KeyLog: each accessor records its type, default, range and names once") {
    auto root = std::make_shared<ParamNode>(ParamNode::make_map(1));
    root->fields.emplace_back("mode", ParamNode::make_scalar("async", 2));
    KeyLog log;
    {
      const KeyLog::Scope scope(log);
      const Params p(root, "s.yaml");
      const Params alg = p.child("algorithm");
      alg.integer("steps", 3, Range::at_least(1));
      alg.choice("kind", "a", {"a", "b"});
      p.choice("mode", "sync", {"sync", "async"});
      p.file_path("file", "x.csv");
      p.numbers("widths", {1, 2}, Range::positive());
      p.flag("on", true);
    }
    CHECK(log.reads().size() == 7); // no accessor logs through another
    const KeyRead* steps = find(log, "algorithm.steps");
    REQUIRE(steps);
    CHECK(steps->type == KeyType::integer);
    CHECK(*steps->default_value == "3");
    CHECK(steps->range.lo == 1);
    CHECK(find(log, "algorithm")->type == KeyType::map);
    CHECK(find(log, "algorithm.kind")->choices == std::vector<std::string>{"a", "b"});
    CHECK(find(log, "algorithm.kind")->value == "a");
    CHECK(find(log, "mode")->value == "async"); // the value read, not the default
    CHECK(find(log, "file")->type == KeyType::file);
    CHECK(*find(log, "widths")->default_value == "[1, 2]");
    CHECK(*find(log, "on")->default_value == "true");
  }

  TEST_CASE("KeyLog: required reads have no default, and list items share a path") {
    auto root = std::make_shared<ParamNode>(ParamNode::make_map(1));
    ParamNode list;
    list.kind = ParamNode::Kind::List;
    for (int i = 0; i < 2; ++i) {
      ParamNode item = ParamNode::make_map(2 + i);
      item.fields.emplace_back("node", ParamNode::make_scalar(std::to_string(i), 2 + i));
      list.items.push_back(item);
    }
    root->fields.emplace_back("failures", list);
    KeyLog log;
    {
      const KeyLog::Scope scope(log);
      const Params p(root, "s.yaml");
      for (const Params& item : p.maps("failures"))
        item.integer("node", Range::non_negative());
    }
    REQUIRE(log.reads().size() == 3);
    CHECK(log.reads()[0].type == KeyType::maps);
    CHECK(log.reads()[1].path == "failures[].node");
    CHECK(log.reads()[2].path == "failures[].node");
    CHECK_FALSE(log.reads()[1].default_value.has_value());
  }

  TEST_CASE("KeyLog: scopes nest, the inner one records and the outer resumes") {
    KeyLog outer, inner;
    Params p;
    {
      const KeyLog::Scope a(outer);
      p.number("x", 1.0);
      {
        const KeyLog::Scope b(inner);
        p.number("y", 1.0);
      }
      p.number("z", 1.0);
    }
    CHECK(outer.reads().size() == 2);
    CHECK(inner.reads().size() == 1);
    CHECK(inner.reads()[0].path == "y");
  }
}
