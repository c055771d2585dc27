// SPDX-License-Identifier: MIT
// QG-DSGDm's refresh of its quasi-global buffer after a mixing, and DecentLaM's momentum on
// the mixed displacement, one block each: written once so that the algorithms and a
// resident backend on the host run the same instructions (same bits).
#pragma once

#include "sim/core/flat_vector.hpp"

#include <cstddef>
#include <cstdint>
#include <span>

namespace dtsim {

// With x the model before the mixing and x_new after it (len floats each):
// mhat = mu mhat + (1 - mu) (x - x_new) / lr, then x = x_new.
inline void quasi_global_refresh(float mu, float lr, float* x, const float* x_new, float* mhat,
                                 std::size_t len) {
  const auto n = static_cast<Eigen::Index>(len);
  VecMap xb(x, n), mh(mhat, n);
  const ConstVecMap mixed(x_new, n);
  mh = mu * mh + (1 - mu) * ((xb - mixed) / lr);
  xb = mixed;
}

// With a refresh every L > 1 steps, one block: the displacement summed, v += (x - x_new) / lr,
// then x = x_new; after every L-th step's mixing, quasi_global_refresh_every.
inline void quasi_global_accumulate(float lr, float* x, const float* x_new, float* v,
                                    std::size_t len) {
  const auto n = static_cast<Eigen::Index>(len);
  VecMap xb(x, n), vb(v, n);
  const ConstVecMap mixed(x_new, n);
  vb += (xb - mixed) / lr;
  xb = mixed;
}
// mhat = mu mhat + ((1 - mu) / L) v, then v = 0 (whole vectors).
inline void quasi_global_refresh_every(float mu, std::int64_t L, std::span<float> mhat,
                                       std::span<float> v) {
  as_vec(mhat) = mu * as_vec(mhat) + ((1 - mu) / static_cast<float>(L)) * as_vec(v);
  as_vec(v).setZero();
}

// DecentLaM's momentum on the mixed displacement, one block: with x the model before the
// mixing and x_new after it, m = beta m + (x - x_new) / lr, then x = x - lr m.
inline void decentlam_momentum(float beta, float lr, float* x, const float* x_new, float* m,
                               std::size_t len) {
  const auto n = static_cast<Eigen::Index>(len);
  VecMap xb(x, n), mb(m, n);
  const ConstVecMap mixed(x_new, n);
  mb = beta * mb + (xb - mixed) / lr;
  xb -= lr * mb;
}

} // namespace dtsim
