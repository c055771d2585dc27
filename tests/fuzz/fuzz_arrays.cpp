// SPDX-License-Identifier: MIT
// Fuzzes the user-array readers: the input as a .npy (parse_npy directly) and as a .npz
// archive (libzip, then parse_npy on the member x_train.npy).
#include "data/array_file.hpp"
#include "data/npy_array.hpp"
#include "fuzz_input.hpp"

#include <stdexcept>

extern "C" int LLVMFuzzerTestOneInput(const std::uint8_t* data, std::size_t size) {
  try {
    dtsim::parse_npy(std::string_view(reinterpret_cast<const char*>(data), size));
  } catch (const std::runtime_error&) {
  }
  const std::string path = dtsim::fuzz::input_file(data, size, ".npz");
  try {
    dtsim::read_named_array(path, "x_train");
  } catch (const std::runtime_error&) {
  }
  return 0;
}
