// SPDX-License-Identifier: MIT
// Builds a Params view from key/value pairs (line 2, 3, ... of "test.yaml") for unit tests.
#pragma once

#include "sim/core/params.hpp"

#include <initializer_list>
#include <memory>
#include <string>
#include <utility>

namespace dtsim::testing {

inline Params make_params(std::initializer_list<std::pair<const char*, std::string>> kv) {
  auto root = std::make_shared<ParamNode>(ParamNode::make_map(1));
  int line = 2;
  for (const auto& [k, v] : kv)
    root->fields.emplace_back(k, ParamNode::make_scalar(v, line++));
  return Params(root, "test.yaml");
}

} // namespace dtsim::testing
