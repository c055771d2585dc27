// SPDX-License-Identifier: MIT
// YAML <-> configuration tree, with limits that make hostile input fail fast.
#pragma once

#include "sim/core/param_tree.hpp"

#include <memory>
#include <string>

namespace dtsim {

// Parses a YAML file into a ParamNode tree keeping source lines. Throws ConfigError
// ("file:line:col: ...") for syntax errors, duplicate keys, non-map documents, files over
// 1 MiB, and documents that expand beyond 100000 nodes or 64 levels (alias bombs).
std::shared_ptr<ParamNode> parse_yaml_file(const std::string& path);
std::shared_ptr<ParamNode> parse_yaml_text(const std::string& text, const std::string& name);

// Applies one "--set dotted.key=value" (value is YAML: 0.1, sync, [64, 32]); creates missing
// maps on the way. Nodes it creates carry line -1 so errors name the --set.
void apply_override(ParamNode& root, const std::string& assignment);

// The tree as YAML text (maps in order, lists of scalars in flow style).
std::string to_yaml(const ParamNode& root);

// A value as one line of flow YAML, the value of a --set key=value: scalars as written
// (quoted ones double-quoted, with escapes), [a, b], {k: v}, ~ for an empty value.
std::string to_flow_yaml(const ParamNode& n);

} // namespace dtsim
