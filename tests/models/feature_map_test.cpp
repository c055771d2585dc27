// SPDX-License-Identifier: MIT
// Lane-blocked maps: staging, flattening, and ReLU + max pooling with ties and odd sizes.
#include "models/feature_map.hpp"
#include "models/max_pool.hpp"

#include <doctest/doctest.h>
#include <vector>

using namespace dtsim;

namespace {

// Element (y, x, c) of example n in a lane-blocked map of `shape`.
float& at(std::vector<float>& m, MapShape shape, int n, int y, int x, int c) {
  return m[static_cast<std::size_t>(n / kLanes) * shape.block_floats() +
           static_cast<std::size_t>(y) * shape.row_floats() +
           static_cast<std::size_t>(x) * shape.pixel_floats() +
           static_cast<std::size_t>(c) * kLanes + static_cast<std::size_t>(n % kLanes)];
}

} // namespace

TEST_SUITE("models") {
  TEST_CASE("feature maps: stage_input pads, reorders CHW to HWC, zeroes idle lanes") {
    const MapShape image{3, 4, 2}; // 3 rows, 4 columns, 2 channels
    const int count = kLanes + 1;  // a second block with one example
    std::vector<float> columns;
    for (int n = 0; n < count; ++n)
      for (int c = 0; c < 2; ++c)
        for (int y = 0; y < 3; ++y)
          for (int x = 0; x < 4; ++x)
            columns.push_back(static_cast<float>(1000 * n + 100 * c + 10 * y + x + 1));
    const MapShape padded{5, 6, 2};
    std::vector<float> blocks(2 * padded.block_floats(), -1.0f);
    // The border is the caller's (zero in a workspace); mark it to see that it is not written.
    stage_input(columns.data(), count, image, 1, blocks.data());
    for (int n = 0; n < 2 * kLanes; ++n)
      for (int y = 0; y < 5; ++y)
        for (int x = 0; x < 6; ++x)
          for (int c = 0; c < 2; ++c) {
            const bool inside = y >= 1 && y <= 3 && x >= 1 && x <= 4;
            const float expect =
                !inside     ? -1.0f
                : n < count ? static_cast<float>(1000 * n + 100 * c + 10 * (y - 1) + (x - 1) + 1)
                            : 0.0f;
            CHECK(at(blocks, padded, n, y, x, c) == expect);
          }
  }

  TEST_CASE("feature maps: flatten is (y, x, c) order and unflatten its inverse") {
    const MapShape shape{2, 3, 2};
    const int count = kLanes + 2;
    std::vector<float> blocks(2 * shape.block_floats());
    for (std::size_t i = 0; i < blocks.size(); ++i)
      blocks[i] = static_cast<float>(i);
    std::vector<float> columns(static_cast<std::size_t>(shape.features() * count));
    flatten(blocks.data(), shape, count, columns.data());
    for (int n = 0; n < count; ++n)
      for (int y = 0; y < 2; ++y)
        for (int x = 0; x < 3; ++x)
          for (int c = 0; c < 2; ++c)
            CHECK(columns[static_cast<std::size_t>(n * 12 + (y * 3 + x) * 2 + c)] ==
                  at(blocks, shape, n, y, x, c));
    std::vector<float> back(blocks.size(), -1.0f);
    unflatten(columns.data(), shape, count, back.data());
    for (int n = 0; n < 2 * kLanes; ++n)
      for (int f = 0; f < 12; ++f) {
        const float expect = n < count ? at(blocks, shape, n, f / 6, f / 2 % 3, f % 2) : 0.0f;
        CHECK(at(back, shape, n, f / 6, f / 2 % 3, f % 2) == expect);
      }
  }

  TEST_CASE("max pool: forward is ReLU of the window maximum, into a padded map") {
    const MapShape z_shape{3, 5, 1}; // odd: the last row and column belong to no window
    std::vector<float> z(z_shape.block_floats());
    for (int y = 0; y < 3; ++y)
      for (int x = 0; x < 5; ++x)
        for (int n = 0; n < kLanes; ++n)
          at(z, z_shape, n, y, x, 0) = static_cast<float>(10 * y + x - 12 + n);
    CHECK(pooled_shape(z_shape).height == 1);
    CHECK(pooled_shape(z_shape).width == 2);
    const MapShape out_shape{3, 4, 1}; // pad 1
    std::vector<float> out(out_shape.block_floats(), -7.0f);
    relu_max_pool_forward(z.data(), z_shape, 1, out.data(), 1);
    for (int n = 0; n < kLanes; ++n) {
      // Windows {(0,0),(0,1),(1,0),(1,1)} and {(0,2),(0,3),(1,2),(1,3)}: maxima 11 - 12 + n
      // and 13 - 12 + n.
      CHECK(at(out, out_shape, n, 1, 1, 0) == std::max(0.0f, static_cast<float>(n - 1)));
      CHECK(at(out, out_shape, n, 1, 2, 0) == static_cast<float>(n + 1));
      CHECK(at(out, out_shape, n, 0, 0, 0) == -7.0f); // border untouched
    }
  }

  TEST_CASE("max pool: backward routes to the first maximum, only through a positive one") {
    const MapShape z_shape{3, 2, 1};
    std::vector<float> z(z_shape.block_floats());
    for (int n = 0; n < kLanes; ++n) {
      // Lane 0: a tie between all four (the first takes it); lane 1: a tie between the last
      // two; lane 2: all negative (ReLU stops it); others: a clear maximum at (1, 0).
      const float v[4] = {n == 0   ? 2.0f
                          : n == 2 ? -3.0f
                                   : 1.0f,
                          n == 0 ? 2.0f : -1.0f,
                          n == 0 || n == 1 ? 2.0f
                          : n == 2         ? -2.0f
                                           : 5.0f,
                          n == 0 || n == 1 ? 2.0f : -4.0f};
      for (int q = 0; q < 4; ++q)
        at(z, z_shape, n, q / 2, q % 2, 0) = v[q];
      at(z, z_shape, n, 2, 0, 0) = 9.0f; // the odd last row
      at(z, z_shape, n, 2, 1, 0) = 9.0f;
    }
    const MapShape da_shape{1, 1, 1};
    std::vector<float> da(da_shape.block_floats());
    for (int n = 0; n < kLanes; ++n)
      at(da, da_shape, n, 0, 0, 0) = static_cast<float>(n + 1);
    relu_max_pool_backward(z.data(), z_shape, 1, da.data());
    for (int n = 0; n < kLanes; ++n) {
      CAPTURE(n);
      const int winner = n == 0 ? 0 : n == 1 ? 2 : n == 2 ? -1 : 2;
      for (int q = 0; q < 4; ++q)
        CHECK(at(z, z_shape, n, q / 2, q % 2, 0) ==
              (q == winner ? static_cast<float>(n + 1) : 0.0f));
      CHECK(at(z, z_shape, n, 2, 0, 0) == 0.0f);
      CHECK(at(z, z_shape, n, 2, 1, 0) == 0.0f);
    }
  }
}
