// SPDX-License-Identifier: MIT
// The scenario keys whose value names a component (algorithm.name, model.kind, ...), each
// name with its one line of help: what `dtsim list` prints and `dtsim schema` describes.
#pragma once

#include <string>
#include <utility>
#include <vector>

namespace dtsim {

struct NamedChoices {
  std::string key;   // dotted scenario key, e.g. "algorithm.name"
  std::string title; // e.g. "algorithms"
  std::vector<std::pair<std::string, std::string>> names; // name, help
};

std::vector<NamedChoices> named_choices();

} // namespace dtsim
