// SPDX-License-Identifier: MIT
// Mlp: ReLU dense stack with a softmax cross-entropy head over one flat parameter vector.
#include "models/mlp.hpp"

#include "models/softmax_xent.hpp"
#include "sim/core/errors.hpp"

#include <algorithm>
#include <cmath>
#include <stdexcept>

namespace dtsim {

// Activations of every layer and two gradient buffers used alternately by consecutive
// layers, each holding (width x max_batch) floats contiguously, plus the GEMM packing space.
class Mlp::MlpWorkspace final : public Workspace {
public:
  const Mlp* owner = nullptr;
  int max_batch = 0;
  std::vector<Eigen::VectorXf> act; // per layer, out x n: ReLU output, or logits for the last
  Eigen::VectorXf delta[2];         // dL/dz of a layer, out x n
  GemmScratch gemm;
};

Mlp::Mlp(int num_inputs, std::vector<int> hidden, int num_classes) {
  if (num_inputs < 1 || num_classes < 2 ||
      std::any_of(hidden.begin(), hidden.end(), [](int h) { return h < 1; }))
    throw std::invalid_argument("Mlp: inputs and hidden widths must be >= 1, classes >= 2");
  std::vector<int> sizes{num_inputs};
  sizes.insert(sizes.end(), hidden.begin(), hidden.end());
  sizes.push_back(num_classes);
  for (std::size_t l = 0; l + 1 < sizes.size(); ++l) {
    layers_.push_back({sizes[l], sizes[l + 1], num_params_});
    num_params_ += layers_.back().num_params();
  }
}

std::string Mlp::describe() const {
  // Appended piece by piece: GCC 12 -O3 raises a false -Wrestrict on "-" + std::string.
  std::string s = layers_.size() == 1 ? "softmax " : "mlp ";
  s += std::to_string(layers_.front().in);
  for (const DenseLayer& l : layers_) {
    s += '-';
    s += std::to_string(l.out);
  }
  s += " (";
  s += std::to_string(num_params_);
  s += " params)";
  return s;
}

void Mlp::init(std::span<float> params, Rng& rng) const {
  DTSIM_ASSERT(params.size() == num_params_, "Mlp::init: params has the wrong size");
  for (std::size_t l = 0; l < layers_.size(); ++l) {
    const DenseLayer& layer = layers_[l];
    const bool is_output = l + 1 == layers_.size();
    const double limit =
        is_output ? std::sqrt(6.0 / (layer.in + layer.out)) : std::sqrt(6.0 / layer.in);
    layer.init(params, limit, rng);
  }
}

std::unique_ptr<Workspace> Mlp::make_workspace(int max_batch) const {
  DTSIM_ASSERT(max_batch >= 1, "Mlp::make_workspace: max_batch must be >= 1");
  auto w = std::make_unique<MlpWorkspace>();
  w->owner = this;
  w->max_batch = max_batch;
  int widest = 0;
  for (std::size_t l = 0; l < layers_.size(); ++l) {
    w->act.emplace_back(static_cast<Eigen::Index>(layers_[l].out) * max_batch);
    widest = std::max(widest, layers_[l].out);
    layers_[l].reserve(w->gemm, max_batch, l > 0);
  }
  for (Eigen::VectorXf& d : w->delta)
    d.resize(static_cast<Eigen::Index>(widest) * max_batch);
  return w;
}

Mlp::MlpWorkspace& Mlp::workspace_for(Workspace& ws, const BatchView& batch) const {
  auto* w = dynamic_cast<MlpWorkspace*>(&ws);
  DTSIM_ASSERT(w != nullptr && w->owner == this, "workspace was made by another model");
  DTSIM_ASSERT(batch.count >= 0 && batch.count <= w->max_batch,
               "batch larger than the workspace's max_batch");
  DTSIM_ASSERT(batch.num_features == layers_.front().in, "batch has the wrong feature count");
  return *w;
}

ConstMatMap Mlp::forward(std::span<const float> params, const BatchView& batch,
                         MlpWorkspace& w) const {
  const Eigen::Index n = batch.count;
  const float* input = batch.features;
  for (std::size_t l = 0; l < layers_.size(); ++l) {
    const DenseLayer& layer = layers_[l];
    MatMap z = mat_map(w.act[l].data(), layer.out, n, layer.out);
    layer.forward(params, mat_map(input, layer.in, n, layer.in), z, w.gemm);
    if (l + 1 < layers_.size())
      relu_forward(z);
    input = w.act[l].data();
  }
  return mat_map(input, layers_.back().out, n, layers_.back().out);
}

double Mlp::loss_and_grad(std::span<const float> params, const BatchView& batch,
                          std::span<float> grad, Workspace& ws) const {
  return backward(params, batch, grad, nullptr, ws);
}

double Mlp::loss_and_per_example_grads(std::span<const float> params, const BatchView& batch,
                                       std::span<float> grad, std::span<float> per_example,
                                       Workspace& ws) const {
  DTSIM_ASSERT(per_example.size() >= num_params_ * static_cast<std::size_t>(batch.count),
               "Mlp::loss_and_per_example_grads: per_example holds fewer than num_params x count");
  return backward(params, batch, grad, per_example.data(), ws);
}

double Mlp::backward(std::span<const float> params, const BatchView& batch, std::span<float> grad,
                     float* per_example, Workspace& ws) const {
  MlpWorkspace& w = workspace_for(ws, batch);
  DTSIM_ASSERT(params.size() == num_params_ && grad.size() == num_params_,
               "Mlp::loss_and_grad: params or grad has the wrong size");
  DTSIM_ASSERT(batch.count >= 1, "Mlp::loss_and_grad: empty batch");
  const Eigen::Index n = batch.count;
  const std::size_t last = layers_.size() - 1;
  // dL/dz of layer l lives in delta[l % 2]: layer l's is read while layer l-1's is written.
  auto delta = [&](std::size_t l) { return w.delta[l % 2].data(); };

  const double loss =
      softmax_xent_grad(forward(params, batch, w), batch.labels,
                        mat_map(delta(last), layers_[last].out, n, layers_[last].out));
  for (std::size_t l = last + 1; l-- > 0;) {
    const DenseLayer& layer = layers_[l];
    const float* input = l == 0 ? batch.features : w.act[l - 1].data();
    const ConstMatMap x = mat_map(input, layer.in, n, layer.in);
    const ConstMatMap dz = mat_map(static_cast<const float*>(delta(l)), layer.out, n, layer.out);
    layer.backward_params(x, dz, grad, w.gemm);
    // dz is the gradient of the batch mean: example k's own gradient is n times its column.
    if (per_example != nullptr)
      layer.per_example_params(x, dz, static_cast<float>(n), per_example, num_params_);
    if (l > 0) {
      MatMap dx = mat_map(delta(l - 1), layer.in, n, layer.in);
      layer.backward_input(params, dz, dx, w.gemm);
      relu_backward(x, dx);
    }
  }
  return loss;
}

EvalResult Mlp::evaluate(std::span<const float> params, const BatchView& batch,
                         Workspace& ws) const {
  MlpWorkspace& w = workspace_for(ws, batch);
  DTSIM_ASSERT(params.size() == num_params_, "Mlp::evaluate: params has the wrong size");
  if (batch.count == 0)
    return {};
  return softmax_xent_eval(forward(params, batch, w), batch.labels);
}

double Mlp::flops_per_example() const {
  // Multiply-adds of the GEMMs only (2 flops each): forward, weight gradient, and the input
  // gradient of every layer but the first. Bias, ReLU and softmax are O(width), not counted.
  double f = 0.0;
  for (std::size_t l = 0; l < layers_.size(); ++l)
    f += 2.0 * layers_[l].in * layers_[l].out * (l == 0 ? 2.0 : 3.0);
  return f;
}

} // namespace dtsim
