// SPDX-License-Identifier: MIT
// A configuration tree (scalars, lists, maps) with source lines; built by sim/scenario.
#pragma once

#include <deque>
#include <string>
#include <utility>
#include <vector>

namespace dtsim {

// One node of a parsed configuration file. Keeps the source line of every value so that
// errors can point at it, and a `used` mark so that unread keys can be reported.
struct ParamNode {
  enum class Kind { Null, Scalar, List, Map };
  Kind kind = Kind::Null;
  std::string scalar; // Scalar: the text as written
  // Scalar: written in quotes (or tagged !!str): a string, never read as a number or a flag,
  // as YAML itself reads it.
  bool quoted = false;
  std::vector<ParamNode> items; // List
  // Map, in file order. A deque: appending a filled-in default must not move siblings
  // that a Params view points at.
  std::deque<std::pair<std::string, ParamNode>> fields;
  int line = 0; // 1-based; 0 = filled-in default; -1 = from a command-line --set
  bool used = false;

  ParamNode* find(const std::string& key);
  const ParamNode* find(const std::string& key) const;
  static ParamNode make_scalar(std::string text, int line = 0);
  static ParamNode make_map(int line = 0);
};

} // namespace dtsim
