// SPDX-License-Identifier: MIT
// The alignment every node's operand of a strided batch has: host code, tested without a GPU.
#pragma once

#include <cstddef>
#include <cstdint>

namespace dtsim::cuda {

// The largest power of two, at most 16 bytes, dividing the first node's address and the
// stride between nodes (in floats): node b's address is the first's plus b strides, so no
// node's is aligned more weakly, and the first node's or the second's is aligned exactly so.
inline std::size_t weakest_alignment(const void* first, long long stride_floats) {
  const std::uintptr_t bits = reinterpret_cast<std::uintptr_t>(first) |
                              static_cast<std::uintptr_t>(stride_floats) * sizeof(float) | 16u;
  return static_cast<std::size_t>(bits & (~bits + 1));
}

} // namespace dtsim::cuda
