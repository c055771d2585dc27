// SPDX-License-Identifier: MIT
// Dense layer forward/backward as GEMMs on preallocated memory, plus ReLU.
#include "models/dense_layer.hpp"

#include "sim/core/flat_vector.hpp"
#include "sim/core/rng.hpp"

#include <algorithm>

namespace dtsim {

void DenseLayer::init(std::span<float> params, double limit, Rng& rng) const {
  MatMap w = weights(params);
  for (Eigen::Index j = 0; j < w.cols(); ++j)
    for (Eigen::Index i = 0; i < w.rows(); ++i)
      w(i, j) = static_cast<float>(rng.uniform(-limit, limit));
  float* b = params.data() + offset + static_cast<std::size_t>(out) * in;
  std::fill(b, b + out, 0.0f);
}

void DenseLayer::reserve(GemmScratch& scratch, int max_batch, bool input_grad) const {
  // Eigen's cache blocking is not monotone in the sizes, so every batch size is visited once
  // (a few ns each) instead of guessing a bound.
  for (int n = 1; n <= max_batch; ++n) {
    scratch.reserve(out, n, in); // forward: (out x in) (in x n)
    scratch.reserve(out, in, n); // weight gradient: (out x n) (n x in)
    if (input_grad)
      scratch.reserve(in, n, out); // input gradient: (in x out) (out x n)
  }
}

void DenseLayer::forward(std::span<const float> params, ConstMatMap x, MatMap z,
                         GemmScratch& scratch) const {
  gemm(false, weights(params), false, x, z, GemmInit::Bias, bias(params), scratch);
}

void DenseLayer::backward_params(ConstMatMap x, ConstMatMap dz, std::span<float> grad,
                                 GemmScratch& scratch) const {
  gemm(false, dz, true, x, weights(grad), GemmInit::Zero, nullptr, scratch);
  Eigen::Map<Eigen::VectorXf> db(grad.data() + offset + static_cast<std::size_t>(out) * in, out);
  // Column by column, in example order: Eigen's rowwise().sum() splits rows into a peeled
  // prefix and an aligned body depending on grad's address, so its rounding (and the run's
  // results) would depend on where the buffer happens to sit.
  db.noalias() = dz.col(0);
  for (Eigen::Index k = 1; k < dz.cols(); ++k)
    db += dz.col(k);
}

void DenseLayer::per_example_params(ConstMatMap x, ConstMatMap dz, float scale, float* per_example,
                                    std::size_t stride) const {
  // Rank-one outer products written column by column of W: each column is one scaled copy
  // of dz_k, so the cost is one write per parameter and example, with nothing recomputed.
  const auto rows = static_cast<std::size_t>(out);
  for (Eigen::Index k = 0; k < dz.cols(); ++k) {
    float* dst = per_example + static_cast<std::size_t>(k) * stride + offset;
    const ConstVecMap d(dz.data() + k * dz.outerStride(), out);
    const float* xk = x.data() + k * x.outerStride();
    const float* dk = d.data();
    for (std::size_t j = 0; j < static_cast<std::size_t>(in); ++j) {
      const float s = scale * xk[j];
      float* o = dst + j * rows;
      for (std::size_t i = 0; i < rows; ++i)
        o[i] = s * dk[i];
    }
    VecMap(dst + rows * static_cast<std::size_t>(in), out).noalias() = scale * d;
  }
}

void DenseLayer::backward_input(std::span<const float> params, ConstMatMap dz, MatMap dx,
                                GemmScratch& scratch) const {
  gemm(true, weights(params), false, dz, dx, GemmInit::Zero, nullptr, scratch);
}

void relu_forward(MatMap z) {
  z = z.cwiseMax(0.0f);
}

void relu_backward(ConstMatMap a, MatMap d) {
  d = (a.array() > 0.0f).select(d, 0.0f);
}

} // namespace dtsim
