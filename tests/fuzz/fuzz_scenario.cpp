// SPDX-License-Identifier: MIT
// Fuzzes the scenario loader: YAML text -> a validated, checking plan. A ConfigError is the
// expected answer to bad input; any other exception, crash or sanitizer report is a bug.
#include "sim/core/errors.hpp"
#include "sim/scenario/run_plan.hpp"

#include <cstdint>
#include <string>

extern "C" int LLVMFuzzerTestOneInput(const std::uint8_t* data, std::size_t size) {
  try {
    dtsim::plan_run_text(std::string(reinterpret_cast<const char*>(data), size), "fuzz.yaml", {},
                         dtsim::PlanUse::check);
  } catch (const dtsim::ConfigError&) {
  }
  return 0;
}
