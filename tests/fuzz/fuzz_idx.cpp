// SPDX-License-Identifier: MIT
// Fuzzes the IDX reader (plain or gzip) with 1 to 3 dimensions, as Fashion-MNIST files have.
#include "data/idx_reader.hpp"
#include "fuzz_input.hpp"
#include "sim/core/errors.hpp"

extern "C" int LLVMFuzzerTestOneInput(const std::uint8_t* data, std::size_t size) {
  const std::string path = dtsim::fuzz::input_file(data, size, ".idx");
  for (int dims : {1, 3}) {
    try {
      dtsim::read_idx(path, dims, "fuzz");
    } catch (const dtsim::ConfigError&) {
    }
  }
  return 0;
}
