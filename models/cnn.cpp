// SPDX-License-Identifier: MIT
// Cnn: conv + ReLU + max-pool stages on lane-blocked maps, then a dense softmax head.
#include "models/cnn.hpp"

#include "models/max_pool.hpp"
#include "models/softmax_xent.hpp"
#include "sim/core/errors.hpp"

#include <algorithm>
#include <cmath>
#include <stdexcept>

namespace dtsim {

// The maps of every conv stage and the dense stack's activations for max_batch examples, the
// lane blocks rounded up, plus the kernels' scratch and the GEMM packing space.
class Cnn::CnnWorkspace final : public Workspace {
public:
  const Cnn* owner = nullptr;
  int max_batch = 0;
  // Per stage: its padded input map (zero border, never written): stage 0 holds the staged
  // batch, a later stage the previous stage's pooled output.
  std::vector<Eigen::VectorXf> conv_in;
  std::vector<Eigen::VectorXf> conv_z;  // per stage: pre-activations; backward: dL/dz
  std::vector<Eigen::VectorXf> conv_dx; // per stage but the first: dL/d(unpadded input)
  Eigen::VectorXf pooled;               // the last stage's pooled map; backward: dL/d(pooled)
  Eigen::VectorXf flat;                 // the same as features x n columns (dense input)
  Eigen::VectorXf dflat;                // dL/dflat
  std::vector<Eigen::VectorXf> act;     // per dense layer, out x n: ReLU output or logits
  Eigen::VectorXf delta[2];             // dL/dz of a dense layer, out x n
  Eigen::VectorXf scratch;              // conv kernels
  GemmScratch gemm;
};

namespace {

std::string shape_text(int c, int h, int w) {
  std::string s = std::to_string(c);
  s += 'x';
  s += std::to_string(h);
  s += 'x';
  s += std::to_string(w);
  return s;
}

// Example n's dW = dz_n x_n^T and db = dz_n, times `scale`, into column n of `per_example`.
void dense_per_example(const DenseLayer& layer, ConstMatMap x, ConstMatMap dz, float scale,
                       float* per_example, std::size_t ld) {
  for (Eigen::Index n = 0; n < x.cols(); ++n) {
    float* col = per_example + static_cast<std::size_t>(n) * ld + layer.offset;
    MatMap dw = mat_map(col, layer.out, layer.in, layer.out);
    for (int j = 0; j < layer.in; ++j)
      dw.col(j) = (scale * x(j, n)) * dz.col(n);
    Eigen::Map<Eigen::VectorXf>(col + static_cast<std::size_t>(layer.out) * layer.in, layer.out) =
        scale * dz.col(n);
  }
}

} // namespace

std::string Cnn::config_error(const Config& c) {
  if (c.input_shape.size() != 3 ||
      std::any_of(c.input_shape.begin(), c.input_shape.end(), [](int d) { return d < 1; }))
    return "expected image inputs (channels x height x width), got a shape of " +
           std::to_string(c.input_shape.size()) + " dimensions";
  if (c.channels.empty() ||
      std::any_of(c.channels.begin(), c.channels.end(), [](int d) { return d < 1; }))
    return "expected at least one conv stage, every one with >= 1 channels";
  if (c.kernel < 1)
    return "expected a kernel size >= 1, got " + std::to_string(c.kernel);
  if (c.padding.size() != c.channels.size())
    return "expected one padding per conv stage (" + std::to_string(c.channels.size()) + "), got " +
           std::to_string(c.padding.size());
  for (int p : c.padding)
    if (p < 0 || p >= c.kernel)
      return "expected paddings in [0, kernel - 1], got " + std::to_string(p);
  if (std::any_of(c.hidden.begin(), c.hidden.end(), [](int d) { return d < 1; }))
    return "expected hidden widths >= 1";
  if (c.num_classes < 2)
    return "expected at least 2 classes";
  int h = c.input_shape[1], w = c.input_shape[2];
  for (std::size_t s = 0; s < c.channels.size(); ++s) {
    const int ho = h + 2 * c.padding[s] - c.kernel + 1, wo = w + 2 * c.padding[s] - c.kernel + 1;
    if (ho < 2 || wo < 2)
      return "input " + shape_text(c.input_shape[0], c.input_shape[1], c.input_shape[2]) +
             " is too small: conv stage " + std::to_string(s + 1) + " (kernel " +
             std::to_string(c.kernel) + ", padding " + std::to_string(c.padding[s]) + ") gets a " +
             std::to_string(h) + "x" + std::to_string(w) +
             " map and must leave at least 2x2 for its pool";
    h = ho / 2;
    w = wo / 2;
  }
  return "";
}

double Cnn::count_params(const Config& c) {
  double params = 0.0;
  double in_c = c.input_shape[0];
  int h = c.input_shape[1], w = c.input_shape[2];
  for (std::size_t s = 0; s < c.channels.size(); ++s) {
    params += (c.kernel * static_cast<double>(c.kernel) * in_c + 1.0) * c.channels[s];
    in_c = c.channels[s];
    h = (h + 2 * c.padding[s] - c.kernel + 1) / 2;
    w = (w + 2 * c.padding[s] - c.kernel + 1) / 2;
  }
  double fan_in = in_c * h * w;
  for (int width : c.hidden) {
    params += (fan_in + 1.0) * width;
    fan_in = width;
  }
  return params + (fan_in + 1.0) * c.num_classes;
}

Cnn::Cnn(Config c) : config_(std::move(c)) {
  if (const std::string e = config_error(config_); !e.empty())
    throw std::invalid_argument("Cnn: " + e);
  int in_c = config_.input_shape[0], h = config_.input_shape[1], w = config_.input_shape[2];
  for (std::size_t s = 0; s < config_.channels.size(); ++s) {
    convs_.push_back(
        {in_c, config_.channels[s], config_.kernel, config_.padding[s], h, w, num_params_});
    num_params_ += convs_.back().num_params();
    const MapShape p = pooled_shape(convs_.back().output());
    in_c = p.channels;
    h = p.height;
    w = p.width;
  }
  std::vector<int> sizes{flat_shape().features()};
  sizes.insert(sizes.end(), config_.hidden.begin(), config_.hidden.end());
  sizes.push_back(config_.num_classes);
  for (std::size_t l = 0; l + 1 < sizes.size(); ++l) {
    dense_.push_back({sizes[l], sizes[l + 1], num_params_});
    num_params_ += dense_.back().num_params();
  }
}

MapShape Cnn::flat_shape() const {
  return pooled_shape(convs_.back().output());
}

std::string Cnn::describe() const {
  // Appended piece by piece: GCC 12 -O3 raises a false -Wrestrict on "-" + std::string.
  std::string s = config_.name;
  s += ' ';
  s += shape_text(config_.input_shape[0], config_.input_shape[1], config_.input_shape[2]);
  s += " conv";
  s += std::to_string(config_.kernel);
  s += 'x';
  s += std::to_string(config_.kernel);
  for (std::size_t i = 0; i < convs_.size(); ++i) {
    s += i == 0 ? ' ' : '-';
    s += std::to_string(convs_[i].out_channels);
    if (convs_[i].pad > 0) {
      s += "(pad ";
      s += std::to_string(convs_[i].pad);
      s += ')';
    }
  }
  s += " dense";
  for (std::size_t i = 0; i < dense_.size(); ++i) {
    s += i == 0 ? ' ' : '-';
    s += std::to_string(dense_[i].out);
  }
  s += " (";
  s += std::to_string(num_params_);
  s += " params)";
  return s;
}

void Cnn::init(std::span<float> params, Rng& rng) const {
  DTSIM_ASSERT(params.size() == num_params_, "Cnn::init: params has the wrong size");
  for (const ConvLayer& c : convs_)
    c.init(params, std::sqrt(6.0 / (c.kernel * c.kernel * c.in_channels)), rng);
  for (std::size_t l = 0; l < dense_.size(); ++l) {
    const DenseLayer& layer = dense_[l];
    const bool is_output = l + 1 == dense_.size();
    layer.init(params,
               is_output ? std::sqrt(6.0 / (layer.in + layer.out)) : std::sqrt(6.0 / layer.in),
               rng);
  }
}

std::unique_ptr<Workspace> Cnn::make_workspace(int max_batch) const {
  DTSIM_ASSERT(max_batch >= 1, "Cnn::make_workspace: max_batch must be >= 1");
  auto w = std::make_unique<CnnWorkspace>();
  w->owner = this;
  w->max_batch = max_batch;
  const auto blocks = static_cast<Eigen::Index>(lane_blocks(max_batch));
  auto zeros = [](Eigen::Index size) { return Eigen::VectorXf::Zero(size); };
  std::size_t scratch = 0;
  for (std::size_t s = 0; s < convs_.size(); ++s) {
    const ConvLayer& c = convs_[s];
    w->conv_in.push_back(zeros(blocks * static_cast<Eigen::Index>(c.input().block_floats())));
    w->conv_z.push_back(zeros(blocks * static_cast<Eigen::Index>(c.output().block_floats())));
    w->conv_dx.push_back(
        zeros(s == 0 ? 0 : blocks * static_cast<Eigen::Index>(c.input_unpadded().block_floats())));
    scratch = std::max(scratch, c.scratch_floats());
  }
  w->scratch = zeros(static_cast<Eigen::Index>(scratch));
  w->pooled = zeros(blocks * static_cast<Eigen::Index>(flat_shape().block_floats()));
  const Eigen::Index flat_size = static_cast<Eigen::Index>(flat_shape().features()) * max_batch;
  w->flat = zeros(flat_size);
  w->dflat = zeros(flat_size);
  int widest = 0;
  for (const DenseLayer& layer : dense_) {
    w->act.push_back(zeros(static_cast<Eigen::Index>(layer.out) * max_batch));
    widest = std::max(widest, layer.out);
    layer.reserve(w->gemm, max_batch, true); // the first layer's input gradient feeds the convs
  }
  for (Eigen::VectorXf& d : w->delta)
    d = zeros(static_cast<Eigen::Index>(widest) * max_batch);
  return w;
}

Cnn::CnnWorkspace& Cnn::workspace_for(Workspace& ws, const BatchView& batch) const {
  auto* w = dynamic_cast<CnnWorkspace*>(&ws);
  DTSIM_ASSERT(w != nullptr && w->owner == this, "workspace was made by another model");
  DTSIM_ASSERT(batch.count >= 0 && batch.count <= w->max_batch,
               "batch larger than the workspace's max_batch");
  DTSIM_ASSERT(batch.num_features == convs_.front().input_unpadded().features(),
               "batch has the wrong feature count");
  return *w;
}

ConstMatMap Cnn::forward(std::span<const float> params, const BatchView& batch,
                         CnnWorkspace& w) const {
  const int n = batch.count;
  const int blocks = lane_blocks(n);
  const ConvLayer& first = convs_.front();
  stage_input(batch.features, n, first.input_unpadded(), first.pad, w.conv_in[0].data());
  for (std::size_t s = 0; s < convs_.size(); ++s) {
    const ConvLayer& c = convs_[s];
    c.forward(params, w.conv_in[s].data(), blocks, w.conv_z[s].data());
    const bool last = s + 1 == convs_.size();
    relu_max_pool_forward(w.conv_z[s].data(), c.output(), blocks,
                          last ? w.pooled.data() : w.conv_in[s + 1].data(),
                          last ? 0 : convs_[s + 1].pad);
  }
  const MapShape flat = flat_shape();
  flatten(w.pooled.data(), flat, n, w.flat.data());

  const float* input = w.flat.data();
  for (std::size_t l = 0; l < dense_.size(); ++l) {
    const DenseLayer& layer = dense_[l];
    MatMap z = mat_map(w.act[l].data(), layer.out, n, layer.out);
    layer.forward(params, mat_map(input, layer.in, n, layer.in), z, w.gemm);
    if (l + 1 < dense_.size())
      relu_forward(z);
    input = w.act[l].data();
  }
  return mat_map(input, dense_.back().out, n, dense_.back().out);
}

double Cnn::backward(std::span<const float> params, const BatchView& batch, std::span<float> grad,
                     std::span<float> per_example, CnnWorkspace& w) const {
  DTSIM_ASSERT(params.size() == num_params_ && grad.size() == num_params_,
               "Cnn: params or grad has the wrong size");
  DTSIM_ASSERT(batch.count >= 1, "Cnn: empty batch");
  const int n = batch.count;
  const int blocks = lane_blocks(n);
  // Deltas carry the 1/n of the batch mean; an example's own gradient is n times its share.
  const float scale = static_cast<float>(n);
  float* columns = per_example.empty() ? nullptr : per_example.data();
  const std::size_t last = dense_.size() - 1;
  auto delta = [&](std::size_t l) { return w.delta[l % 2].data(); };

  const double loss =
      softmax_xent_grad(forward(params, batch, w), batch.labels,
                        mat_map(delta(last), dense_[last].out, n, dense_[last].out));
  for (std::size_t l = last + 1; l-- > 0;) {
    const DenseLayer& layer = dense_[l];
    const float* input = l == 0 ? w.flat.data() : w.act[l - 1].data();
    const ConstMatMap x = mat_map(input, layer.in, n, layer.in);
    const ConstMatMap dz = mat_map(static_cast<const float*>(delta(l)), layer.out, n, layer.out);
    layer.backward_params(x, dz, grad, w.gemm);
    if (columns)
      dense_per_example(layer, x, dz, scale, columns, num_params_);
    MatMap dx = mat_map(l == 0 ? w.dflat.data() : delta(l - 1), layer.in, n, layer.in);
    layer.backward_input(params, dz, dx, w.gemm);
    if (l > 0)
      relu_backward(x, dx);
  }

  unflatten(w.dflat.data(), flat_shape(), n, w.pooled.data());
  for (std::size_t s = convs_.size(); s-- > 0;) {
    const ConvLayer& c = convs_[s];
    const float* da = s + 1 == convs_.size() ? w.pooled.data() : w.conv_dx[s + 1].data();
    float* dz = w.conv_z[s].data();
    relu_max_pool_backward(dz, c.output(), blocks, da);
    c.backward_params(w.conv_in[s].data(), dz, blocks, grad, w.scratch.data());
    if (columns)
      c.backward_params_per_example(w.conv_in[s].data(), dz, n, scale, columns, num_params_,
                                    w.scratch.data());
    if (s > 0) // the first stage's input is the data: no gradient needed
      c.backward_input(params, dz, blocks, w.conv_dx[s].data(), w.scratch.data());
  }
  return loss;
}

double Cnn::loss_and_grad(std::span<const float> params, const BatchView& batch,
                          std::span<float> grad, Workspace& ws) const {
  return backward(params, batch, grad, {}, workspace_for(ws, batch));
}

double Cnn::loss_and_per_example_grads(std::span<const float> params, const BatchView& batch,
                                       std::span<float> grad, std::span<float> per_example,
                                       Workspace& ws) const {
  CnnWorkspace& w = workspace_for(ws, batch);
  DTSIM_ASSERT(per_example.size() == num_params_ * static_cast<std::size_t>(batch.count),
               "Cnn: per_example must hold num_params() x batch.count floats");
  DTSIM_ASSERT(batch.count >= 1, "Cnn: empty batch");
  return backward(params, batch, grad, per_example, w);
}

EvalResult Cnn::evaluate(std::span<const float> params, const BatchView& batch,
                         Workspace& ws) const {
  CnnWorkspace& w = workspace_for(ws, batch);
  DTSIM_ASSERT(params.size() == num_params_, "Cnn::evaluate: params has the wrong size");
  if (batch.count == 0)
    return {};
  return softmax_xent_eval(forward(params, batch, w), batch.labels);
}

double Cnn::flops_per_example() const {
  // Multiply-adds (2 flops each) of the convolutions and GEMMs: forward and weight gradient
  // everywhere, input gradient everywhere but the first conv (its input is the data). Bias,
  // ReLU, pooling and softmax are O(activations), not counted.
  double macs = 0.0;
  for (std::size_t s = 0; s < convs_.size(); ++s)
    macs += convs_[s].macs_per_example() * (s == 0 ? 2.0 : 3.0);
  for (const DenseLayer& l : dense_)
    macs += 3.0 * l.in * l.out;
  return 2.0 * macs;
}

} // namespace dtsim
