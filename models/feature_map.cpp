// SPDX-License-Identifier: MIT
// Conversions between the dataset's column layout and lane-blocked feature maps.
#include "models/feature_map.hpp"

#include <algorithm>

namespace dtsim {

void stage_input(const float* columns, int count, MapShape image, int pad, float* blocks) {
  const int features = image.features();
  const MapShape padded{image.height + 2 * pad, image.width + 2 * pad, image.channels};
  for (int b = 0; b < lane_blocks(count); ++b) {
    float* block = blocks + static_cast<std::size_t>(b) * padded.block_floats();
    const int lanes = std::min(kLanes, count - b * kLanes);
    const float* col[kLanes];
    for (int lane = 0; lane < lanes; ++lane)
      col[lane] = columns + static_cast<std::size_t>(b * kLanes + lane) * features;
    // The dataset stores channel planes (CHW); the map keeps a pixel's channels together. The
    // kLanes values of one feature are gathered and stored contiguously.
    int f = 0;
    for (int c = 0; c < image.channels; ++c)
      for (int y = 0; y < image.height; ++y) {
        float* dst = block + static_cast<std::size_t>(y + pad) * padded.row_floats() +
                     static_cast<std::size_t>(pad) * padded.pixel_floats() +
                     static_cast<std::size_t>(c) * kLanes;
        for (int x = 0; x < image.width; ++x, ++f, dst += padded.pixel_floats()) {
          int lane = 0;
          for (; lane < lanes; ++lane)
            dst[lane] = col[lane][f];
          for (; lane < kLanes; ++lane)
            dst[lane] = 0.0f;
        }
      }
  }
}

void flatten(const float* blocks, MapShape shape, int count, float* columns) {
  const int features = shape.features();
  for (int n = 0; n < count; ++n) {
    const float* src =
        blocks + static_cast<std::size_t>(n / kLanes) * shape.block_floats() + n % kLanes;
    float* col = columns + static_cast<std::size_t>(n) * features;
    for (int f = 0; f < features; ++f)
      col[f] = src[static_cast<std::size_t>(f) * kLanes];
  }
}

void unflatten(const float* columns, MapShape shape, int count, float* blocks) {
  const int features = shape.features();
  for (int n = 0; n < lane_blocks(count) * kLanes; ++n) {
    float* dst = blocks + static_cast<std::size_t>(n / kLanes) * shape.block_floats() + n % kLanes;
    const float* col = columns + static_cast<std::size_t>(n) * features;
    for (int f = 0; f < features; ++f)
      dst[static_cast<std::size_t>(f) * kLanes] = n < count ? col[f] : 0.0f;
  }
}

} // namespace dtsim
