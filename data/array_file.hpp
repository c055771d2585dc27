// SPDX-License-Identifier: MIT
// Named numeric arrays from a user's files: a NumPy .npz archive (numpy.savez or
// savez_compressed), an HDF5 file (.h5, .hdf5), or a folder of NAME.npy files.
#pragma once

#include "data/npy_array.hpp"

#include <string>

namespace dtsim {

// The array `name` of `path` (which kind of container by its extension; a folder reads
// NAME.npy from it). Throws std::runtime_error with one line: the file cannot be opened, has
// no such array (naming the ones it has), or the array is not numeric.
NumericArray read_named_array(const std::string& path, const std::string& name);

} // namespace dtsim
