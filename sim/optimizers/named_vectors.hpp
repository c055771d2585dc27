// SPDX-License-Identifier: MIT
// The vectors that a method's engine-thread steps name, on the host or on a resident backend.
#pragma once

#include "sim/engine/algorithm.hpp"
#include "sim/engine/context.hpp"
#include "sim/engine/resident_vectors.hpp"
#include "sim/engine/shared_buffer.hpp"
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

// The vectors a method's steps name most; `resident` is the backend attach_resident was
// given, or null (docs/extending.md: a method added at run time names them so too).
// Node `node`'s model, which its next gradient reads (on the host ctx.params: the node must not
// be computing).
inline NamedVector model_vector(ResidentVectors* resident, Context& ctx, int node) {
  return {ResidentVectors::VectorRef::model(node),
          resident != nullptr ? std::span<float>() : ctx.params(node)};
}
// The gradient on_gradient was given for `node` (on a resident backend the node's gradient
// row, which keeps it until the node's next gradient).
inline NamedOperand gradient_operand(ResidentVectors* resident, int node,
                                     const GradientResult& result) {
  return {ResidentVectors::VectorRef::gradient(node),
          resident != nullptr ? std::span<const float>() : result.grad};
}
// A message (ctx.new_buffer()), written while the writer holds its only handle, and read.
inline NamedVector message_vector(ResidentVectors* resident, SharedBuffer& b) {
  return {ResidentVectors::VectorRef::message(b.id()),
          resident != nullptr ? std::span<float>() : b.data()};
}
inline NamedOperand message_operand(ResidentVectors* resident, const SharedBuffer& b) {
  return {ResidentVectors::VectorRef::message(b.id()),
          resident != nullptr ? std::span<const float>() : b.view()};
}

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
