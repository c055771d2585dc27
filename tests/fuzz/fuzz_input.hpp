// SPDX-License-Identifier: MIT
// The fuzz targets' shared plumbing: readers that take a path get the input as a file.
#pragma once

#include <cstddef>
#include <cstdint>
#include <fstream>
#include <string>
#include <unistd.h>

namespace dtsim::fuzz {

// Writes the input to one file per process (overwritten by every input) and returns its path.
inline std::string input_file(const std::uint8_t* data, std::size_t size, const char* suffix) {
  const std::string path = "/tmp/dtsim_fuzz_" + std::to_string(getpid()) + suffix;
  std::ofstream(path, std::ios::binary | std::ios::trunc)
      .write(reinterpret_cast<const char*>(data), static_cast<std::streamsize>(size));
  return path;
}

} // namespace dtsim::fuzz
