// SPDX-License-Identifier: MIT
// The vectors that a method's engine-thread steps name, on the host or on a resident backend.
#pragma once

#include "sim/engine/resident_vectors.hpp"
#include "sim/optimizers/vector_ops.hpp"

#include <span>

namespace dtsim {

// A vector a step reads: its name on a resident backend, else its host memory.
struct NamedOperand {
  ResidentVectors::VectorRef ref;
  std::span<const float> host;
};
// A vector a step writes.
struct NamedVector {
  ResidentVectors::VectorRef ref;
  std::span<float> host;
  operator NamedOperand() const { return {ref, host}; }
};

// dst = op(a, b, s): on the host vectors (vector_ops.hpp's apply_vector_op), or queued to the
// resident backend when there is one; both run the same element-wise step.
inline void apply_named(ResidentVectors* resident, ResidentVectors::VectorOp op, NamedVector dst,
                        NamedOperand a, NamedOperand b = {}, float s = 0) {
  if (resident != nullptr)
    resident->apply(op, dst.ref, a.ref, b.ref, s);
  else
    apply_vector_op(op, dst.host, a.host, b.host, s);
}

} // namespace dtsim
