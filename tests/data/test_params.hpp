// SPDX-License-Identifier: MIT
// Small helpers that build configuration trees for the data tests.
#pragma once

#include "sim/core/errors.hpp"
#include "sim/core/params.hpp"

#include <memory>
#include <string>
#include <utility>
#include <vector>

namespace dtsim::test {

using Fields = std::vector<std::pair<std::string, std::string>>;

// A map of scalars, each on its own fake line (2, 3, ...) so that errors name a line.
inline ParamNode map_of(const Fields& fields, int first_line = 2) {
  ParamNode m = ParamNode::make_map(first_line - 1);
  int line = first_line;
  for (const auto& [k, v] : fields)
    m.fields.emplace_back(k, ParamNode::make_scalar(v, line++));
  return m;
}

// A Params view of `fields`, read as if from "s.yaml".
inline Params params_of(const Fields& fields) {
  return Params(std::make_shared<ParamNode>(map_of(fields)), "s.yaml");
}

// The ConfigError message `f` throws, or "" if it throws none.
template <class F> std::string config_error_of(F&& f) {
  try {
    f();
  } catch (const ConfigError& e) {
    return e.what();
  }
  return "";
}

} // namespace dtsim::test
