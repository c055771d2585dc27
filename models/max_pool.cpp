// SPDX-License-Identifier: MIT
// ReLU + 2x2 max pooling, forward and backward, kLanes examples per vector operation.
#include "models/max_pool.hpp"

#include <algorithm>

namespace dtsim {
namespace {

namespace ei = Eigen::internal;
using Packet = ei::packet_traits<float>::type;

} // namespace

MapShape pooled_shape(MapShape z) {
  return {z.height / 2, z.width / 2, z.channels};
}

void relu_max_pool_forward(const float* z, MapShape z_shape, int blocks, float* out, int pad) {
  const MapShape p = pooled_shape(z_shape);
  const MapShape o{p.height + 2 * pad, p.width + 2 * pad, p.channels};
  const std::size_t px = z_shape.pixel_floats(), row = z_shape.row_floats();
  const Packet zero = ei::pset1<Packet>(0.0f);
  for (int b = 0; b < blocks; ++b)
    for (int y = 0; y < p.height; ++y)
      for (int x = 0; x < p.width; ++x) {
        const float* z00 = z + b * z_shape.block_floats() + 2 * y * row + 2 * x * px;
        float* a =
            out + b * o.block_floats() + (y + pad) * o.row_floats() + (x + pad) * o.pixel_floats();
        for (std::size_t i = 0; i < px; i += kLanes) {
          const Packet m = ei::pmax(
              ei::pmax(ei::ploadu<Packet>(z00 + i), ei::ploadu<Packet>(z00 + px + i)),
              ei::pmax(ei::ploadu<Packet>(z00 + row + i), ei::ploadu<Packet>(z00 + row + px + i)));
          ei::pstoreu(a + i, ei::pmax(m, zero));
        }
      }
}

void relu_max_pool_backward(float* z, MapShape z_shape, int blocks, const float* da) {
  const MapShape p = pooled_shape(z_shape);
  const std::size_t px = z_shape.pixel_floats(), row = z_shape.row_floats();
  const Packet zero = ei::pset1<Packet>(0.0f);
  for (int b = 0; b < blocks; ++b) {
    float* zb = z + b * z_shape.block_floats();
    for (int y = 0; y < p.height; ++y)
      for (int x = 0; x < p.width; ++x) {
        float* w[4] = {zb + 2 * y * row + 2 * x * px, nullptr, nullptr, nullptr};
        w[1] = w[0] + px;
        w[2] = w[0] + row;
        w[3] = w[2] + px;
        const float* g = da + b * p.block_floats() + y * p.row_floats() + x * p.pixel_floats();
        for (std::size_t i = 0; i < px; i += kLanes) {
          Packet v[4];
          for (int k = 0; k < 4; ++k)
            v[k] = ei::ploadu<Packet>(w[k] + i);
          const Packet m = ei::pmax(ei::pmax(v[0], v[1]), ei::pmax(v[2], v[3]));
          // dL/da where the ReLU passed the maximum, routed to the first element equal to it.
          const Packet d = ei::pand(ei::ploadu<Packet>(g + i), ei::pcmp_lt(zero, m));
          Packet taken = ei::pcmp_eq(v[0], m);
          ei::pstoreu(w[0] + i, ei::pand(d, taken));
          for (int k = 1; k < 4; ++k) {
            const Packet first = ei::pandnot(ei::pcmp_eq(v[k], m), taken);
            ei::pstoreu(w[k] + i, ei::pand(d, first));
            taken = ei::por(taken, first);
          }
        }
      }
    // Rows and columns no window covered have no influence on the loss.
    if (z_shape.height % 2 == 1)
      std::fill(zb + (z_shape.height - 1) * row, zb + z_shape.height * row, 0.0f);
    if (z_shape.width % 2 == 1)
      for (int y = 0; y < z_shape.height; ++y)
        std::fill(zb + y * row + (z_shape.width - 1) * px, zb + (y + 1) * row, 0.0f);
  }
}

} // namespace dtsim
