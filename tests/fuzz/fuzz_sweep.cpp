// SPDX-License-Identifier: MIT
// Fuzzes the sweep loader (a sweep file's text; its base: may name any file).
#include "fuzz_input.hpp"
#include "sim/core/errors.hpp"
#include "sim/scenario/sweep_plan.hpp"

extern "C" int LLVMFuzzerTestOneInput(const std::uint8_t* data, std::size_t size) {
  try {
    dtsim::plan_sweep(dtsim::fuzz::input_file(data, size, ".sweep.yaml"));
  } catch (const dtsim::ConfigError&) {
  }
  return 0;
}
