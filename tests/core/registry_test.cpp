// SPDX-License-Identifier: MIT
// Registry: lookup by name with "did you mean".
#include "sim/core/errors.hpp"
#include "sim/core/registry.hpp"

#include <doctest/doctest.h>
#include <sstream>

using namespace dtsim;

TEST_SUITE("core") {
  TEST_CASE("Registry: makes by name and rejects unknown names with a suggestion") {
    Registry<int, int> reg;
    reg.add("double", "twice the input", [](const Params&, int x) { return 2 * x; });
    reg.add("square", "the input squared", [](const Params&, int x) { return x * x; });
    auto root = std::make_shared<ParamNode>(ParamNode::make_map(1));
    root->fields.emplace_back("kind", ParamNode::make_scalar("sqare", 7));
    Params p(root, "r.yaml");
    CHECK(reg.make(Params(), "kind", "square", 3) == 9);
    try {
      reg.make(p, "kind", "double", 3);
      FAIL("expected ConfigError");
    } catch (const ConfigError& e) {
      CHECK(std::string(e.what()).find("did you mean 'square'") != std::string::npos);
    }
    std::ostringstream os;
    reg.describe(os);
    CHECK(os.str().find("twice the input") != std::string::npos);
  }
}
