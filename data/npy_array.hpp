// SPDX-License-Identifier: MIT
// NumPy's .npy format (format versions 1.0-3.0): the header parsed, the data converted.
#pragma once

#include <cstdint>
#include <string>
#include <string_view>
#include <vector>

namespace dtsim {

// A numeric array read from a .npy, a .npz member or an HDF5 dataset, in C (row-major)
// order: the first index is the example.
struct NumericArray {
  std::vector<std::int64_t> shape;
  // Every element as a float: what models compute with, and exact for the integers that
  // can be labels (below 2^24); half the memory of doubles for a large feature array.
  std::vector<float> values;
};

// Parses one .npy file held in `bytes`. Accepts little-endian booleans, integers of 1-8
// bytes and float16/32/64, C order. Throws std::runtime_error with one line naming what is
// wrong (not a .npy file, big-endian, Fortran order, object or string arrays, truncated data).
NumericArray parse_npy(std::string_view bytes);

// Bytes of a .npy file holding `a` as float32 (tests).
std::string write_npy(const NumericArray& a);

} // namespace dtsim
