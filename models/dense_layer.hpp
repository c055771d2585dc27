// SPDX-License-Identifier: MIT
// A fully connected layer over a slice of the flat parameter vector, batched as GEMMs.
#pragma once

#include "models/gemm.hpp"

#include <cstddef>
#include <span>

namespace dtsim {

class Rng;

// y = W x + b for a batch: activations are (features x batch) column-major, one example per
// column, so that forward and backward are single GEMMs over the batch.
// Parameter layout (at `offset` in the flat vector): W (out x in, column-major), then b (out).
struct DenseLayer {
  int in = 0;
  int out = 0;
  std::size_t offset = 0;

  std::size_t num_params() const {
    return static_cast<std::size_t>(out) * (static_cast<std::size_t>(in) + 1);
  }
  ConstMatMap weights(std::span<const float> params) const {
    return mat_map(params.data() + offset, out, in, out);
  }
  MatMap weights(std::span<float> params) const {
    return mat_map(params.data() + offset, out, in, out);
  }
  const float* bias(std::span<const float> params) const {
    return params.data() + offset + static_cast<std::size_t>(out) * in;
  }

  // W ~ U(-limit, limit) drawn in storage order; b = 0.
  void init(std::span<float> params, double limit, Rng& rng) const;
  // Makes `scratch` large enough for every batch size up to max_batch (backward_input only
  // when `input_grad`).
  void reserve(GemmScratch& scratch, int max_batch, bool input_grad) const;

  // z = W x + b; x: in x n, z: out x n.
  void forward(std::span<const float> params, ConstMatMap x, MatMap z, GemmScratch& scratch) const;
  // From dz = dL/dz (out x n) and the layer input x: dW = dz x^T and db = dz 1, written
  // (not added) into this layer's slice of `grad`.
  void backward_params(ConstMatMap x, ConstMatMap dz, std::span<float> grad,
                       GemmScratch& scratch) const;
  // Per-example parameter gradients from the same x and dz: column k of `per_example`
  // (`stride` floats apart, k < n) gets this layer's slice of scale * (dz_k x_k^T, dz_k),
  // in the flat layout. scale = n undoes the 1/n of a batch-mean dz. Writes only this
  // layer's slice of each column; no allocation.
  void per_example_params(ConstMatMap x, ConstMatMap dz, float scale, float* per_example,
                          std::size_t stride) const;
  // dx = W^T dz (in x n).
  void backward_input(std::span<const float> params, ConstMatMap dz, MatMap dx,
                      GemmScratch& scratch) const;
};

// a = max(z, 0) in place.
void relu_forward(MatMap z);
// d = d * [a > 0] in place, where a is the ReLU output (a > 0 exactly where z > 0).
void relu_backward(ConstMatMap a, MatMap d);

} // namespace dtsim
