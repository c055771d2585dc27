// SPDX-License-Identifier: MIT
// YAML -> tree: lines, syntax errors, duplicates, alias bombs, --set, round trip.
#include "sim/core/errors.hpp"
#include "sim/core/params.hpp"
#include "sim/scenario/yaml_tree.hpp"
#include "support/config_error.hpp"

#include <doctest/doctest.h>
#include <sstream>

using namespace dtsim;

TEST_SUITE("scenario") {
  TEST_CASE("yaml_tree: keeps source lines") {
    auto t = parse_yaml_text("a: 1\nb:\n  c: [1, 2]\n", "s.yaml");
    CHECK(t->find("a")->line == 1);
    CHECK(t->find("b")->find("c")->line == 3);
    CHECK(t->find("b")->find("c")->items.size() == 2);
  }

  TEST_CASE("yaml_tree: syntax errors name file, line and column") {
    const std::string e =
        testing::config_error_of([] { parse_yaml_text("a: 1\nb: [1, 2\n", "bad.yaml"); });
    CHECK(e.rfind("bad.yaml:", 0) == 0);
    CHECK(e.find("YAML syntax error") != std::string::npos);
  }

  TEST_CASE("yaml_tree: duplicate keys and non-map documents are rejected") {
    CHECK(testing::config_error_of([] { parse_yaml_text("a: 1\na: 2\n", "d.yaml"); }) ==
          "d.yaml:2:1: duplicate key 'a'");
    CHECK(testing::config_error_of([] {
            parse_yaml_text("- 1\n- 2\n", "l.yaml");
          }).find("expected a map") != std::string::npos);
    CHECK(testing::config_error_of([] { parse_yaml_text("", "e.yaml"); }).find("empty") !=
          std::string::npos);
  }

  TEST_CASE("yaml_tree: a second document is refused, not dropped, and a trailing '---' is fine") {
    CHECK(testing::config_error_of([] { parse_yaml_text("a: 1\n---\na: 2\n", "m.yaml"); }) ==
          "m.yaml:3: a second YAML document (after '---'); expected one map of settings per "
          "file");
    CHECK(parse_yaml_text("---\na: 1\n---\n", "t.yaml")->find("a")->scalar == "1");
  }

  TEST_CASE("yaml_tree: a key with no value keeps the key's line") {
    CHECK(parse_yaml_text("a:\nb: 2\n", "n.yaml")->find("a")->line == 1);
  }

  TEST_CASE("yaml_tree: an alias bomb fails fast instead of exhausting memory") {
    // Ten levels, each a list of ten aliases of the previous one: 10^10 nodes if expanded.
    std::ostringstream bomb;
    bomb << "a0: &a0 [x, x, x, x, x, x, x, x, x, x]\n";
    for (int i = 1; i < 10; ++i) {
      bomb << 'a' << i << ": &a" << i << " [";
      for (int k = 0; k < 10; ++k)
        bomb << (k ? ", " : "") << "*a" << (i - 1);
      bomb << "]\n";
    }
    CHECK(testing::config_error_of([&] {
            parse_yaml_text(bomb.str(), "bomb.yaml");
          }).find("more than 100000 nodes") != std::string::npos);
  }

  TEST_CASE("yaml_tree: --set overrides and creates keys") {
    auto t = parse_yaml_text("algorithm: {name: dsgd, lr: 0.1}\n", "s.yaml");
    apply_override(*t, "algorithm.lr=0.5");
    apply_override(*t, "model.hidden=[64, 32]");
    CHECK(t->find("algorithm")->find("lr")->scalar == "0.5");
    CHECK(t->find("algorithm")->find("lr")->line == -1);
    CHECK(t->find("model")->find("hidden")->items.size() == 2);
    CHECK(testing::config_error_of([&] {
            apply_override(*t, "novalue");
          }).find("expected key=value") != std::string::npos);
    CHECK(testing::config_error_of([&] {
            apply_override(*t, "algorithm.name.x=1");
          }).find("not a map") != std::string::npos);
  }

  TEST_CASE("yaml_tree: a quoted value is a string, refused where a number or a flag is read") {
    auto t = parse_yaml_text("lr: \"0.1\"\nsteps: '10'\nsizes: [1, \"2\"]\nper_node: \"true\"\n"
                             "tagged: !!str 3\nname: \"7\"\nplain: 0.5\nflag: true\n",
                             "s.yaml");
    const Params p(t, "s.yaml");
    const std::string lr = testing::config_error_of([&] { p.number("lr", 1.0); });
    CHECK(lr.find("s.yaml:1: lr: expected a number") == 0);
    CHECK(lr.find("got the string \"0.1\" (a number is written without quotes)") !=
          std::string::npos);
    CHECK(testing::config_error_of([&] {
            p.integer("steps", 1, Range::positive());
          }).find("s.yaml:2: steps:") == 0);
    CHECK(testing::config_error_of([&] {
            p.numbers("sizes", {}, Range::positive());
          }).find("got the string \"2\"") != std::string::npos);
    CHECK(testing::config_error_of([&] {
            p.flag("per_node", false);
          }).find("s.yaml:4: per_node: expected true or false, got the string \"true\"") == 0);
    CHECK(testing::config_error_of([&] { p.number("tagged", 1.0); }).find("s.yaml:5:") == 0);
    // As text, a quoted value is what it always was; plain values read as before.
    CHECK(p.text("name", "") == "7");
    CHECK(p.number("plain", 1.0) == 0.5);
    CHECK(p.flag("flag", false));
  }

  TEST_CASE("yaml_tree: to_yaml round-trips") {
    auto t = parse_yaml_text("a: 1\nb: {c: [1, 2], d: text}\n", "s.yaml");
    auto u = parse_yaml_text(to_yaml(*t), "again.yaml");
    CHECK(to_yaml(*u) == to_yaml(*t));
    CHECK(u->find("b")->find("d")->scalar == "text");
  }
}
