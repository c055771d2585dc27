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

// A `model:` map at line 3 of s.yaml with scalar keys and list keys, one key per line from 4.
Params
section_with_lists(std::initializer_list<std::pair<std::string, std::string>> scalars,
                   std::initializer_list<std::pair<std::string, std::vector<std::string>>> lists) {
  auto root = std::make_shared<ParamNode>(ParamNode::make_map(1));
  ParamNode model = ParamNode::make_map(3);
  int line = 4;
  for (const auto& [k, v] : scalars)
    model.fields.emplace_back(k, ParamNode::make_scalar(v, line++));
  for (const auto& [k, items] : lists) {
    ParamNode list;
    list.kind = ParamNode::Kind::List;
    list.line = line++;
    for (const std::string& item : items)
      list.items.push_back(ParamNode::make_scalar(item, list.line));
    model.fields.emplace_back(k, list);
  }
  root->fields.emplace_back("model", model);
  return Params(root, "s.yaml").child("model");
}

std::string cnn_error_of(const Params& p, std::vector<int> shape = {1, 28, 28}) {
  try {
    make_model(p, shape, 10);
  } catch (const ConfigError& e) {
    return e.what();
  }
  return "";
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
      // Found by fuzz_scenario: a count beyond long long was converted to one (undefined;
      // printed as -9223372036854775808). Now named as the number it is.
      const std::vector<std::string> beyond{"3.3e108"};
      const std::string e = error_of(model_section({}, &beyond));
      CHECK(e.find("at most 200000000 parameters, got 2.") != std::string::npos);
      CHECK(e.find("-9223372036854775808") == std::string::npos);
    }
  }

  TEST_CASE("make_model: the input and class counts come from the dataset") {
    CHECK_THROWS_AS(make_model(model_section({}), {}, 10), std::invalid_argument);
    CHECK_THROWS_AS(make_model(model_section({}), {28, 0}, 10), std::invalid_argument);
    CHECK_THROWS_AS(make_model(model_section({}), {28}, 1), std::invalid_argument);
  }

  TEST_CASE("make_model: lenet pads 28x28 inputs, not 32x32 ones, and reads no keys") {
    const Params fmnist = model_section({{"kind", "lenet"}});
    CHECK(make_model(fmnist, {1, 28, 28}, 10)->describe() ==
          "lenet 1x28x28 conv5x5 6(pad 2)-16 dense 120-84-10 (61706 params)");
    CHECK_NOTHROW(fmnist.reject_unused());
    CHECK(make_model(model_section({{"kind", "lenet"}}), {3, 32, 32}, 100)->describe() ==
          "lenet 3x32x32 conv5x5 6-16 dense 120-84-100 (69656 params)");
    const std::vector<std::string> hidden{"32"};
    const Params stray = model_section({{"kind", "lenet"}}, &hidden);
    make_model(stray, {1, 28, 28}, 10);
    CHECK_THROWS_AS(stray.reject_unused(), ConfigError);
  }

  TEST_CASE("make_model: cnn keys, their defaults written back, and their errors") {
    const Params p = section_with_lists({{"kind", "cnn"}}, {});
    CHECK(make_model(p, {1, 28, 28}, 10)->describe() ==
          "cnn 1x28x28 conv5x5 6(pad 2)-16 dense 120-84-10 (61706 params)");
    for (const char* key : {"channels", "kernel", "padding", "hidden"})
      CHECK(p.node().find(key) != nullptr);
    CHECK(p.node().find("padding")->items.size() == 2);
    CHECK(make_model(section_with_lists({{"kind", "cnn"}, {"kernel", "3"}},
                                        {{"channels", {"8", "8", "16"}},
                                         {"padding", {"1", "1", "1"}},
                                         {"hidden", {"32"}}}),
                     {3, 32, 32}, 10)
              ->describe() ==
          "cnn 3x32x32 conv3x3 8(pad 1)-8(pad 1)-16(pad 1) dense 32-10 (10530 params)");

    CHECK(cnn_error_of(section_with_lists({{"kind", "cnn"}}, {{"padding", {"2"}}})) ==
          "s.yaml:5: model.padding: expected one padding per conv stage (2 values), got 1");
    CHECK(cnn_error_of(section_with_lists({{"kind", "cnn"}}, {{"channels", {"6", "0"}}})) ==
          "s.yaml:5: model.channels: expected a number >= 1, got 0");
    CHECK(cnn_error_of(section_with_lists({{"kind", "cnn"}}, {{"channels", {"6", "2.5"}}})) ==
          "s.yaml:5: model.channels: expected a list of integers >= 1, got 2.5");
    CHECK(cnn_error_of(section_with_lists({{"kind", "cnn"}, {"kernel", "0"}}, {})) ==
          "s.yaml:5: model.kernel: expected a number in [1, 64], got 0");
    CHECK(cnn_error_of(
              section_with_lists({{"kind", "cnn"}}, {{"channels", {"6", "16", "16", "16"}}})) ==
          "s.yaml:5: model.channels: input 1x28x28 is too small: conv stage 3 (kernel 5, "
          "padding 0) gets a 5x5 map and must leave at least 2x2 for its pool");
    CHECK(cnn_error_of(section_with_lists({{"kind", "cnn"}}, {{"channels", {"100000", "100000"}}}))
              .find("at most 200000000 parameters") != std::string::npos);
    CHECK(cnn_error_of(model_section({{"kind", "lenet"}}), {8, 8, 1}) ==
          "s.yaml:4: model.kind: input 8x8x1 is too small: conv stage 1 (kernel 5, padding 0) "
          "gets a 8x1 map and must leave at least 2x2 for its pool");
    CHECK(cnn_error_of(model_section({{"kind", "lenet"}}), {20}) ==
          "s.yaml:4: model.kind: expected image data (channels x height x width) for a lenet, "
          "got 1-dimensional examples (use mlp or softmax)");
    CHECK(cnn_error_of(model_section({{"kind", "resnet20"}}), {20}) ==
          "s.yaml:4: model.kind: expected image data (channels x height x width) for a resnet20, "
          "got 1-dimensional examples (use mlp or softmax)");
    CHECK(cnn_error_of(model_section({{"kind", "resnet20"}, {"groups", "3"}}), {3, 32, 32})
              .find("model.groups: expected a number of GroupNorm groups that divides 16") !=
          std::string::npos);
  }

  TEST_CASE("make_model: model_kinds lists every kind with help") {
    const auto kinds = model_kinds();
    REQUIRE(kinds.size() == 6);
    CHECK(kinds[0].first == "softmax");
    CHECK(kinds[1].first == "mlp");
    CHECK(kinds[2].first == "lenet");
    CHECK(kinds[3].first == "cnn");
    CHECK(kinds[4].first == "resnet20");
    CHECK(kinds[5].first == "none"); // timing-only, planned without a model
    for (const auto& [name, help] : kinds)
      CHECK(!help.empty());
  }
}
