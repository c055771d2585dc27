// SPDX-License-Identifier: MIT
// make_model: kinds, defaults written back, and one precise error per bad setting.
#include "models/make_model.hpp"
#include "sim/core/errors.hpp"

#include <doctest/doctest.h>
#include <memory>
#include <string>

using namespace dtsim;

namespace {

// A `model:` map at line 3 of s.yaml with the given scalar keys (one per line from 4).
Params model_section(std::initializer_list<std::pair<std::string, std::string>> scalars,
                     const std::vector<std::string>* hidden = nullptr) {
  auto root = std::make_shared<ParamNode>(ParamNode::make_map(1));
  ParamNode model = ParamNode::make_map(3);
  int line = 4;
  for (const auto& [k, v] : scalars)
    model.fields.emplace_back(k, ParamNode::make_scalar(v, line++));
  if (hidden) {
    ParamNode list;
    list.kind = ParamNode::Kind::List;
    list.line = line;
    for (const std::string& h : *hidden)
      list.items.push_back(ParamNode::make_scalar(h, line));
    model.fields.emplace_back("hidden", list);
  }
  root->fields.emplace_back("model", model);
  return Params(root, "s.yaml").child("model");
}

std::string error_of(const Params& p) {
  try {
    make_model(p, {28, 28}, 10);
  } catch (const ConfigError& e) {
    return e.what();
  }
  return "";
}

} // namespace

TEST_SUITE("models") {
  TEST_CASE("make_model: defaults to mlp 256-128 and writes the defaults back") {
    const Params p = model_section({});
    const auto m = make_model(p, {28, 28}, 10);
    CHECK(m->describe() == "mlp 784-256-128-10 (235146 params)");
    REQUIRE(p.node().find("kind") != nullptr);
    CHECK(p.node().find("kind")->scalar == "mlp");
    REQUIRE(p.node().find("hidden") != nullptr);
    CHECK(p.node().find("hidden")->items.size() == 2);
    CHECK_NOTHROW(p.reject_unused());
  }

  TEST_CASE("make_model: softmax and custom widths") {
    CHECK(make_model(model_section({{"kind", "softmax"}}), {3, 4}, 5)->describe() ==
          "softmax 12-5 (65 params)");
    const std::vector<std::string> hidden{"32", "16", "8"};
    CHECK(make_model(model_section({{"kind", "mlp"}}, &hidden), {10}, 3)->describe() ==
          "mlp 10-32-16-8-3 (1043 params)");
    // A scalar is a one-element list.
    CHECK(make_model(model_section({{"hidden", "64"}}), {10}, 3)->describe() ==
          "mlp 10-64-3 (899 params)");
  }

  TEST_CASE("make_model: softmax does not read `hidden`, so the caller reports it") {
    const std::vector<std::string> hidden{"32"};
    const Params p = model_section({{"kind", "softmax"}}, &hidden);
    make_model(p, {10}, 3);
    CHECK_THROWS_AS(p.reject_unused(), ConfigError);
  }

  TEST_CASE("make_model: unknown kind suggests the closest") {
    const std::string e = error_of(model_section({{"kind", "mpl"}}));
    CHECK(e.find("s.yaml:4: model.kind: unknown name 'mpl' (did you mean 'mlp'?)") == 0);
    CHECK(e.find("softmax") != std::string::npos);
  }

  TEST_CASE("make_model: bad hidden widths") {
    SUBCASE("zero") {
      const std::vector<std::string> h{"64", "0"};
      CHECK(error_of(model_section({}, &h)).find("s.yaml:4: model.hidden: expected") == 0);
    }
    SUBCASE("negative") {
      const std::vector<std::string> h{"-3"};
      CHECK(error_of(model_section({}, &h)).find("model.hidden: expected a number >= 1") !=
            std::string::npos);
    }
    SUBCASE("not an integer") {
      const std::vector<std::string> h{"12.5"};
      CHECK(error_of(model_section({}, &h)) ==
            "s.yaml:4: model.hidden: expected a list of positive integers, got 12.5");
    }
    SUBCASE("not a number") {
      const std::vector<std::string> h{"wide"};
      CHECK(error_of(model_section({}, &h)).find("expected a number") != std::string::npos);
    }
    SUBCASE("empty list") {
      const std::vector<std::string> h{};
      CHECK(error_of(model_section({}, &h)).find("non-empty list") != std::string::npos);
    }
    SUBCASE("absurdly large") {
      const std::vector<std::string> h{"100000", "100000"};
      CHECK(error_of(model_section({}, &h)).find("at most 200000000 parameters") !=
            std::string::npos);
      const std::vector<std::string> huge{"1e15"};
      CHECK(error_of(model_section({}, &huge)).find("at most 200000000 parameters") !=
            std::string::npos);
    }
  }

  TEST_CASE("make_model: the input and class counts come from the dataset") {
    CHECK_THROWS_AS(make_model(model_section({}), {}, 10), std::invalid_argument);
    CHECK_THROWS_AS(make_model(model_section({}), {28, 0}, 10), std::invalid_argument);
    CHECK_THROWS_AS(make_model(model_section({}), {28}, 1), std::invalid_argument);
  }

  TEST_CASE("make_model: model_kinds lists every kind with help") {
    const auto kinds = model_kinds();
    REQUIRE(kinds.size() == 2);
    CHECK(kinds[0].first == "softmax");
    CHECK(kinds[1].first == "mlp");
    for (const auto& [name, help] : kinds)
      CHECK(!help.empty());
  }
}
