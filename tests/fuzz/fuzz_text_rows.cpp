// SPDX-License-Identifier: MIT
// Fuzzes the text-row reader behind edge lists, compute traces and latency matrices, and the
// number parsers every field goes through.
#include "fuzz_input.hpp"
#include "sim/core/text_rows.hpp"

extern "C" int LLVMFuzzerTestOneInput(const std::uint8_t* data, std::size_t size) {
  const auto rows = dtsim::read_text_rows(dtsim::fuzz::input_file(data, size, ".rows.txt"));
  if (rows)
    for (const dtsim::TextRow& row : *rows)
      for (const std::string& field : row.fields) {
        (void)dtsim::parse_number(field);
        (void)dtsim::parse_integer(field);
      }
  return 0;
}
