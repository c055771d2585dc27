// SPDX-License-Identifier: MIT
#include "tanh_mlp.hpp"

#include "sim/core/rng.hpp"

#include <Eigen/Dense>
#include <cmath>
#include <tuple>

namespace {

using namespace dtsim;
using Matrix = Eigen::MatrixXf;
using MatrixMap = Eigen::Map<Matrix>;
using ConstMatrixMap = Eigen::Map<const Matrix>;
using VectorMap = Eigen::Map<Eigen::VectorXf>;
// Views of one flat vector (params or grad) as W1 (hid x in), b1, W2 (out x hid), b2.
using Layers = std::tuple<MatrixMap, VectorMap, MatrixMap, VectorMap>;

// Activations of one batch, sized once for the largest batch: no allocation per step.
struct TanhWorkspace final : Workspace {
  TanhWorkspace(int hidden, int classes, int max_batch)
      : h(hidden, max_batch), z(classes, max_batch), dh(hidden, max_batch) {}
  Matrix h, z, dh;
};

class TanhMlp final : public Model {
public:
  TanhMlp(int features, int hidden, int classes) : in_(features), hid_(hidden), out_(classes) {}

  std::string describe() const override {
    return "tanh-mlp " + std::to_string(in_) + "-" + std::to_string(hid_) + "-" +
           std::to_string(out_) + " (example, " + std::to_string(num_params()) + " params)";
  }
  std::size_t num_params() const override {
    return static_cast<std::size_t>(hid_ * (in_ + 1) + out_ * (hid_ + 1));
  }
  void init(std::span<float> params, Rng& rng) const override { // Glorot uniform, zero biases
    std::fill(params.begin(), params.end(), 0.0f);
    const auto fill = [&](float* w, int rows, int cols) {
      const double a = std::sqrt(6.0 / (rows + cols));
      for (int k = 0; k < rows * cols; ++k)
        w[k] = static_cast<float>(rng.uniform(-a, a));
    };
    fill(params.data(), hid_, in_);
    fill(params.data() + hid_ * (in_ + 1), out_, hid_);
  }
  std::unique_ptr<Workspace> make_workspace(int max_batch) const override {
    return std::make_unique<TanhWorkspace>(hid_, out_, max_batch);
  }

  double loss_and_grad(std::span<const float> params, const BatchView& batch, std::span<float> grad,
                       Workspace& workspace) const override {
    auto& ws = static_cast<TanhWorkspace&>(workspace);
    const int n = batch.count;
    const double loss = forward(params, batch, ws); // z now holds softmax - onehot, / n
    auto [w1, b1, w2, b2] = layers(grad.data());
    const ConstMatrixMap x(batch.features, in_, n);
    auto h = ws.h.leftCols(n);
    auto dz = ws.z.leftCols(n);
    w2.noalias() = dz * h.transpose();
    b2 = dz.rowwise().sum();
    auto dh = ws.dh.leftCols(n);
    dh.noalias() = std::get<2>(layers(params.data())).transpose() * dz;
    dh.array() *= 1 - h.array().square(); // tanh' = 1 - tanh^2
    w1.noalias() = dh * x.transpose();
    b1 = dh.rowwise().sum();
    return loss;
  }

  EvalResult evaluate(std::span<const float> params, const BatchView& batch,
                      Workspace& workspace) const override {
    auto& ws = static_cast<TanhWorkspace&>(workspace);
    EvalResult r;
    r.count = batch.count;
    r.loss_sum = forward(params, batch, ws, &r.correct) * batch.count;
    return r;
  }

  double flops_per_example() const override { return 6.0 * (in_ * hid_ + hid_ * out_); }

private:
  Layers layers(const float* base) const {
    float* p = const_cast<float*>(base);
    return {MatrixMap(p, hid_, in_), VectorMap(p + hid_ * in_, hid_),
            MatrixMap(p + hid_ * (in_ + 1), out_, hid_),
            VectorMap(p + hid_ * (in_ + 1) + out_ * hid_, out_)};
  }

  // Fills ws.h = tanh(W1 x + b1) and ws.z = (softmax(W2 h + b2) - onehot) / n; returns the
  // mean cross-entropy and counts correct argmaxes into *correct when given.
  double forward(std::span<const float> params, const BatchView& batch, TanhWorkspace& ws,
                 std::int64_t* correct = nullptr) const {
    const int n = batch.count;
    auto [w1, b1, w2, b2] = layers(params.data());
    const ConstMatrixMap x(batch.features, in_, n);
    auto h = ws.h.leftCols(n);
    h.noalias() = w1 * x;
    h = (h.colwise() + b1).array().tanh().matrix();
    auto z = ws.z.leftCols(n);
    z.noalias() = w2 * h;
    z.colwise() += b2;
    double loss = 0;
    for (int j = 0; j < n; ++j) {
      auto col = z.col(j);
      Eigen::Index best = 0;
      const float top = col.maxCoeff(&best);
      if (correct != nullptr && best == batch.labels[j])
        ++*correct;
      col.array() = (col.array() - top).exp();
      const float sum = col.sum();
      loss += std::log(sum) - std::log(col(batch.labels[j]));
      col /= sum;
      col(batch.labels[j]) -= 1;
    }
    z /= static_cast<float>(n);
    return loss / n;
  }

  int in_, hid_, out_;
};

} // namespace

std::unique_ptr<Model> make_tanh_mlp(const Params& p, const ModelSetup& setup) {
  int features = 1;
  for (const int d : setup.input_shape)
    features *= d; // images are flattened
  const int hidden = static_cast<int>(p.integer("hidden", 64, Range::between(1, 65536)));
  return std::make_unique<TanhMlp>(features, hidden, setup.num_classes);
}
