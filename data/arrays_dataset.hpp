// SPDX-License-Identifier: MIT
// `data.dataset: arrays`: a user's own train and test arrays, any feature and class count.
#pragma once

#include "data/dataset.hpp"
#include "sim/core/params.hpp"

namespace dtsim {

// Keys of `data.arrays:`
//   file: data.npz        # required: a .npz (numpy.savez / savez_compressed), an HDF5 file
//                         #   (.h5, .hdf5) or a folder of NAME.npy files
//   train_x: x_train      # the arrays' names in it (defaults as here)
//   train_y: y_train
//   test_x: x_test
//   test_y: y_test
//   classes: 0            # 0 = one more than the largest label
//   standardize: false    # true: every feature to mean 0 and std 1 by the training set's
//                         #   statistics (applied to both sets)
// x arrays: (examples, features) for flat data, (examples, H, W) or (examples, C, H, W)
// channels first for the CNNs; any numeric dtype, read as float32. y arrays: integer labels
// in [0, classes), shape (examples,) or (examples, 1). Throws ConfigError naming the key and
// what is wrong: a missing array, rows of x and y that differ, train and test example shapes
// that differ, a label out of range or not whole, a NaN or infinite feature (with its index).
DataSplit load_arrays(const Params& arrays);

} // namespace dtsim
