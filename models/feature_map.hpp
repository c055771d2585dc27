// SPDX-License-Identifier: MIT
// Lane-blocked feature maps: the batch layout the convolutional layers compute on.
#pragma once

#include <Eigen/Core>
#include <cstddef>

namespace dtsim {

// Floats per SIMD register in this build (8 with AVX, 4 with SSE, 1 without vectorisation).
inline constexpr int kLanes = Eigen::internal::packet_traits<float>::size;

// Batches of feature maps are stored in blocks of kLanes examples: block b holds examples
// b*kLanes ... b*kLanes + kLanes - 1 as height x width x channels x kLanes floats, the example
// (lane) fastest. One SIMD register then holds one value of kLanes examples, so every
// convolution kernel is a register-blocked outer product with aligned loads and compile-time
// offsets, whatever the channel counts (LeNet's 1, 6 and 16 channels leave SIMD lanes idle in
// a channels-innermost layout). A block's geometry does not depend on the batch size, so zero
// padding borders written once stay valid. Lanes past the batch hold zeros or finite values
// derived from zeros, and their gradients are zero.
struct MapShape {
  int height = 0;
  int width = 0;
  int channels = 0;

  std::size_t pixel_floats() const { return static_cast<std::size_t>(channels) * kLanes; }
  std::size_t row_floats() const { return static_cast<std::size_t>(width) * pixel_floats(); }
  std::size_t block_floats() const { return static_cast<std::size_t>(height) * row_floats(); }
  int features() const { return height * width * channels; }
};

inline int lane_blocks(int count) {
  return (count + kLanes - 1) / kLanes;
}

// Copies `count` examples stored as columns of channels x height x width floats (column-major
// features x count, the dataset layout) into the interior of a lane-blocked map of shape
// (height + 2 pad) x (width + 2 pad) x channels. Lanes past `count` are set to zero; the
// border is not written (it stays zero).
void stage_input(const float* columns, int count, MapShape image, int pad, float* blocks);

// Lane-blocked map -> features x count columns (feature index (y * width + x) * channels + c).
void flatten(const float* blocks, MapShape shape, int count, float* columns);
// The inverse; lanes past `count` are set to zero.
void unflatten(const float* columns, MapShape shape, int count, float* blocks);

} // namespace dtsim
