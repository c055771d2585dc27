// SPDX-License-Identifier: MIT
// ReLU followed by 2x2 max pooling (stride 2) on lane-blocked feature maps.
#pragma once

#include "models/feature_map.hpp"

namespace dtsim {

// Pooled size: floor(height / 2) x floor(width / 2); an odd last row or column is dropped
// (as PyTorch's MaxPool2d(2) does).
MapShape pooled_shape(MapShape z);

// a = max(0, max of each 2x2 window of z) (ReLU and max pooling commute), written into the
// interior of `out`, a map of pooled_shape(z) plus a border of `pad` (left untouched).
void relu_max_pool_forward(const float* z, MapShape z_shape, int blocks, float* out, int pad);

// In place: z becomes dL/dz. Each window's first maximum receives dL/da (`da`, unpadded
// pooled_shape(z)) when that maximum is > 0; every other element, including a dropped odd row
// or column, becomes 0.
void relu_max_pool_backward(float* z, MapShape z_shape, int blocks, const float* da);

} // namespace dtsim
