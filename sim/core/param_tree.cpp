// SPDX-License-Identifier: MIT
// Lookup helpers of the configuration tree.
#include "sim/core/param_tree.hpp"

namespace dtsim {

ParamNode* ParamNode::find(const std::string& key) {
  for (auto& [k, v] : fields)
    if (k == key)
      return &v;
  return nullptr;
}

const ParamNode* ParamNode::find(const std::string& key) const {
  for (const auto& [k, v] : fields)
    if (k == key)
      return &v;
  return nullptr;
}

ParamNode ParamNode::make_scalar(std::string text, int line) {
  ParamNode n;
  n.kind = Kind::Scalar;
  n.scalar = std::move(text);
  n.line = line;
  return n;
}

ParamNode ParamNode::make_map(int line) {
  ParamNode n;
  n.kind = Kind::Map;
  n.line = line;
  return n;
}

} // namespace dtsim
