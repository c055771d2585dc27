// SPDX-License-Identifier: MIT
// Reader of IDX files of unsigned bytes (the MNIST format), gzip-compressed or plain.
#pragma once

#include <cstdint>
#include <memory>
#include <span>
#include <string>
#include <vector>

namespace dtsim {

// An IDX array: its dimensions (outermost first) and its bytes in row-major order, a view
// into the decoded file that the array owns. Invariant: bytes.size() == product of dims.
struct IdxArray {
  std::vector<std::uint32_t> dims;
  std::span<const std::uint8_t> bytes;
  std::unique_ptr<std::uint8_t[]> storage; // the whole decoded file; `bytes` points into it
};

// Reads `file` (gzip, recognised by its magic bytes, or plain) and checks that it is an
// unsigned-byte IDX array with `num_dims` dimensions and exactly the announced number of
// bytes. Throws ConfigError "<where>: <file>: <what is wrong>" if it is missing, not IDX,
// truncated or corrupt. `where` is the config location that named the file
// ("s.yaml:3: data.path").
IdxArray read_idx(const std::string& file, int num_dims, const std::string& where);

} // namespace dtsim
