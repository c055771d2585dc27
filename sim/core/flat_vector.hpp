// SPDX-License-Identifier: MIT
// Flat float parameter vectors and the views algorithms use on them.
#pragma once

#include <Eigen/Core>
#include <span>

namespace dtsim {

using Vec = Eigen::VectorXf;
using VecMap = Eigen::Map<Eigen::VectorXf>;
using ConstVecMap = Eigen::Map<const Eigen::VectorXf>;

inline VecMap as_vec(std::span<float> s) {
  return VecMap(s.data(), static_cast<Eigen::Index>(s.size()));
}
inline ConstVecMap as_vec(std::span<const float> s) {
  return ConstVecMap(s.data(), static_cast<Eigen::Index>(s.size()));
}

// True if every entry is finite (no NaN, no Inf).
inline bool all_finite(std::span<const float> s) {
  return as_vec(s).allFinite();
}

} // namespace dtsim
