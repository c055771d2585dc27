// SPDX-License-Identifier: MIT
// `dtsim schema [scenario|sweep]`: the JSON Schema of a file format, on standard output.
#include "apps/commands.hpp"
#include "sim/core/errors.hpp"
#include "sim/scenario/scenario_schema.hpp"

#include <iostream>

namespace dtsim::cli {

int schema_command(const std::vector<std::string>& args) {
  if (args.size() > 1)
    throw ConfigError("schema: expected at most one argument, scenario or sweep");
  const std::string format = args.empty() ? "scenario" : args[0];
  if (format == "scenario")
    std::cout << scenario_schema_json();
  else if (format == "sweep")
    std::cout << sweep_schema_json();
  else
    throw ConfigError("schema: unknown format '" + format + "'; expected scenario or sweep");
  return 0;
}

} // namespace dtsim::cli
