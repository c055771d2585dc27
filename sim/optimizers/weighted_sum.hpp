// SPDX-License-Identifier: MIT
// The gossip mixing's weighted sum of vectors, one block: written once so that the host
// algorithms and a resident backend on the host run the same instructions (same bits).
#pragma once

#include "sim/core/flat_vector.hpp"

#include <cstddef>
#include <span>

namespace dtsim {

// dst[0..len) = self_w * self[0..len) + sum_c w[c] * input(c)[0..len), summed in c order.
// dst may be self (in place). input(c) gives the c-th vector's block.
template <class Input>
void weighted_sum(float self_w, const float* self, std::span<const float> w, Input input,
                  std::size_t len, float* dst) {
  const auto n = static_cast<Eigen::Index>(len);
  VecMap out(dst, n);
  if (self == dst)
    out *= self_w;
  else
    out = self_w * ConstVecMap(self, n);
  for (std::size_t c = 0; c < w.size(); ++c)
    out += w[c] * ConstVecMap(input(c), n);
}

} // namespace dtsim
