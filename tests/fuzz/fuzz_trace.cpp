// SPDX-License-Identifier: MIT
// Fuzzes the trace reader: any bytes as an HDF5 trace file.
#include "fuzz_input.hpp"
#include "sim/core/errors.hpp"
#include "sim/trace/trace_reader.hpp"

extern "C" int LLVMFuzzerTestOneInput(const std::uint8_t* data, std::size_t size) {
  try {
    dtsim::read_trace(dtsim::fuzz::input_file(data, size, ".h5"));
  } catch (const dtsim::ConfigError&) {
  }
  return 0;
}
