// SPDX-License-Identifier: MIT
// `dtsim list`: every name a scenario may use, with one-line help.
#include "apps/commands.hpp"
#include "sim/core/errors.hpp"
#include "sim/scenario/named_choices.hpp"

#include <iostream>

namespace dtsim::cli {

int list_command(const std::vector<std::string>& args) {
  if (!args.empty())
    throw ConfigError("list: takes no arguments");
  for (const NamedChoices& c : named_choices()) {
    std::cout << c.title << " (" << c.key << "):\n";
    for (const auto& [name, help] : c.names) {
      std::cout << "  " << name;
      for (std::size_t i = name.size(); i < 22; ++i)
        std::cout << ' ';
      std::cout << help << '\n';
    }
  }
  return 0;
}

} // namespace dtsim::cli
