// SPDX-License-Identifier: MIT
// dtsim schema: the schemas are derived from the loaders' reads (types, defaults, ranges,
// names, which component a key belongs to). tests/app/schema_check.py validates the shipped
// files against them with a JSON Schema validator.
#include "sim/scenario/scenario_schema.hpp"

#include <doctest/doctest.h>
#include <nlohmann/json.hpp>

using nlohmann::json;

namespace {
const json& at(const json& schema, std::initializer_list<const char*> path) {
  const json* s = &schema;
  for (const char* key : path)
    s = &s->at("properties").at(key);
  return *s;
}
} // namespace

TEST_SUITE("scenario") {
  TEST_CASE("scenario schema: every component's keys, typed, with defaults and ranges") {
    const json s = json::parse(dtsim::scenario_schema_json());
    CHECK(s.at("$schema") == "https://json-schema.org/draft/2020-12/schema");
    CHECK(s.at("additionalProperties") == false);

    const json& nodes = at(s, {"nodes"});
    CHECK(nodes.at("type") == "integer");
    CHECK(nodes.at("minimum") == 1);
    CHECK(nodes.at("default") == 16);

    // A key only CHOCO-SGD/SwarmSGD's compressors read, found by probing the names.
    const json& ratio = at(s, {"algorithm", "compressor", "ratio"});
    CHECK(ratio.at("exclusiveMinimum") == 0);
    CHECK(ratio.at("maximum") == 1);
    CHECK(ratio.at("description")
              .get<std::string>()
              .find("Used when algorithm.compressor.kind is topk, randomk") != std::string::npos);

    const json& name = at(s, {"algorithm", "name"});
    CHECK(name.at("enum").size() >= 15);
    CHECK(name.at("description").get<std::string>().find("choco-sgd:") != std::string::npos);

    // Keys read only when present are found too.
    CHECK(at(s, {"algorithm", "lr_schedule", "warmup_epochs"}).at("type") == "number");
    CHECK(at(s, {"system", "compute", "failures"}).at("items").at("properties").contains("node"));
    // A bound that follows another key (a node index < nodes) is not stated as a constant.
    const json& node =
        at(s, {"system", "compute", "failures"}).at("items").at("properties").at("node");
    CHECK_FALSE(node.contains("maximum"));
    // The default derived from the file name is described, not given as a literal.
    CHECK_FALSE(at(s, {"name"}).contains("default"));
  }

  TEST_CASE("sweep schema: own keys from the sweep loader, overrides checked per key") {
    const json s = json::parse(dtsim::sweep_schema_json());
    CHECK(s.at("required") == json::array({"base"}));
    CHECK(at(s, {"tune", "goal"}).at("enum") == json::array({"max", "min"}));
    const json& lr = at(s, {"grid"}).at("properties").at("algorithm.lr");
    CHECK(lr.at("type") == "array");
    CHECK(lr.at("items").at("$ref") == "#/$defs/scenario/properties/algorithm/properties/lr");
    CHECK(s.at("$defs").at("scenario").at("properties").contains("algorithm"));
  }
}
