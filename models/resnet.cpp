// SPDX-License-Identifier: MIT
// ResNet: GEMM convolutions, GroupNorm, option-A shortcuts, average pool, dense head.
#include "models/resnet.hpp"

#include "models/softmax_xent.hpp"
#include "sim/core/errors.hpp"

#include <algorithm>
#include <cmath>
#include <stdexcept>

namespace dtsim {

namespace {

constexpr int kWidths[3] = {16, 32, 64};

// The map of one conv's output for max_batch examples, in floats.
std::size_t map_floats(const GemmConv& c, int max_batch) {
  return static_cast<std::size_t>(c.out_channels) * c.out_pixels() *
         static_cast<std::size_t>(max_batch);
}

MapLayout input_layout(const GemmConv& c, int n) {
  return MapLayout::batch_major(c.in_height, c.in_width, n);
}

void relu(float* a, std::size_t count) {
  Eigen::Map<Eigen::VectorXf> v(a, static_cast<Eigen::Index>(count));
  v = v.cwiseMax(0.0f);
}

// d = d * [a > 0]: the gradient through a ReLU whose output is a.
void relu_grad(const float* a, float* d, std::size_t count) {
  for (std::size_t i = 0; i < count; ++i)
    d[i] = a[i] > 0.0f ? d[i] : 0.0f;
}

} // namespace

class ResNet::ResNetWorkspace final : public Workspace {
public:
  struct BlockMaps {
    Eigen::VectorXf z1, h1, z2, out; // conv1 output, its ReLU(GN), conv2 output, block output
    Eigen::VectorXf stats1, stats2;  // GroupNorm (mean, 1/std) per example and group
  };
  const ResNet* owner = nullptr;
  int max_batch = 0;
  Eigen::VectorXf stem_z, stem_a, stem_stats;
  std::vector<BlockMaps> blocks;
  Eigen::VectorXf patches; // the largest conv's im2col matrix (also its gradient)
  Eigen::VectorXf pooled;  // 64 x n
  Eigen::VectorXf logits;  // classes x n
  Eigen::VectorXf dlogits; // classes x n (softmax_xent_grad must not write over the logits)
  Eigen::VectorXf dpooled;
  Eigen::VectorXf grad_maps[3]; // rotating dL/d(map) buffers of the largest map's size
  GemmScratch gemm;
};

std::string ResNet::config_error(const Config& c) {
  if (c.input_shape.size() != 3)
    return "expected image data (channels x height x width)";
  if (c.input_shape[0] < 1 || c.input_shape[1] < 4 || c.input_shape[2] < 4)
    return "expected images of at least 4x4 pixels (two stride-2 stages), got " +
           std::to_string(c.input_shape[1]) + "x" + std::to_string(c.input_shape[2]);
  if (c.blocks < 1)
    return "expected at least 1 block per stage";
  if (c.groups < 1 || kWidths[0] % c.groups != 0)
    return "expected a number of GroupNorm groups that divides 16 (1, 2, 4, 8 or 16), got " +
           std::to_string(c.groups);
  if (c.num_classes < 2)
    return "expected at least 2 classes";
  return "";
}

double ResNet::count_params(const Config& c) {
  double params = 9.0 * c.input_shape[0] * kWidths[0] + 2.0 * kWidths[0];
  int in = kWidths[0];
  for (int width : kWidths)
    for (int b = 0; b < c.blocks; ++b) {
      params += 9.0 * in * width + 9.0 * width * width + 4.0 * width;
      in = width;
    }
  return params + (in + 1.0) * c.num_classes;
}

ResNet::ResNet(Config c) : config_(std::move(c)) {
  if (const std::string e = config_error(config_); !e.empty())
    throw std::invalid_argument("ResNet: " + e);
  std::size_t offset = 0;
  auto place_conv = [&offset](GemmConv& conv, int in, int out, int height, int width, int stride) {
    conv.in_channels = in;
    conv.out_channels = out;
    conv.in_height = height;
    conv.in_width = width;
    conv.stride = stride;
    conv.offset = offset;
    offset += conv.num_params();
  };
  auto place_norm = [&offset, this](GroupNorm& norm, const GemmConv& conv) {
    norm.channels = conv.out_channels;
    norm.groups = config_.groups;
    norm.pixels = static_cast<int>(conv.out_pixels());
    norm.offset = offset;
    offset += norm.num_params();
  };
  place_conv(stem_, config_.input_shape[0], kWidths[0], config_.input_shape[1],
             config_.input_shape[2], 1);
  place_norm(stem_norm_, stem_);
  int in = kWidths[0], height = stem_.out_height(), width = stem_.out_width();
  for (int s = 0; s < 3; ++s)
    for (int b = 0; b < config_.blocks; ++b) {
      Block block;
      const int stride = s > 0 && b == 0 ? 2 : 1;
      place_conv(block.conv1, in, kWidths[s], height, width, stride);
      place_norm(block.norm1, block.conv1);
      height = block.conv1.out_height();
      width = block.conv1.out_width();
      place_conv(block.conv2, kWidths[s], kWidths[s], height, width, 1);
      place_norm(block.norm2, block.conv2);
      in = kWidths[s];
      blocks_.push_back(block);
    }
  head_.in = in;
  head_.out = config_.num_classes;
  head_.offset = offset;
  num_params_ = offset + head_.num_params();
}

std::string ResNet::describe() const {
  const auto& s = config_.input_shape;
  return "resnet" + std::to_string(6 * config_.blocks + 2) + " " + std::to_string(s[0]) + "x" +
         std::to_string(s[1]) + "x" + std::to_string(s[2]) + " widths 16-32-64 groupnorm(" +
         std::to_string(config_.groups) + " groups), " + std::to_string(config_.num_classes) +
         " classes (" + std::to_string(num_params_) + " params)";
}

void ResNet::init(std::span<float> params, Rng& rng) const {
  DTSIM_ASSERT(params.size() == num_params_, "ResNet::init: params has the wrong size");
  auto init_conv = [&](const GemmConv& c) { c.init(params, std::sqrt(6.0 / c.patch_size()), rng); };
  init_conv(stem_);
  stem_norm_.init(params);
  for (const Block& b : blocks_) {
    init_conv(b.conv1);
    b.norm1.init(params);
    init_conv(b.conv2);
    b.norm2.init(params);
  }
  head_.init(params, 1.0 / std::sqrt(head_.in), rng);
}

std::unique_ptr<Workspace> ResNet::make_workspace(int max_batch) const {
  DTSIM_ASSERT(max_batch >= 1, "ResNet::make_workspace: max_batch must be >= 1");
  auto w = std::make_unique<ResNetWorkspace>();
  w->owner = this;
  w->max_batch = max_batch;
  auto floats = [](std::size_t count) {
    return Eigen::VectorXf::Zero(static_cast<Eigen::Index>(count));
  };
  auto stats = [&](const GroupNorm& g) {
    return floats(2 * static_cast<std::size_t>(g.groups) * static_cast<std::size_t>(max_batch));
  };
  std::size_t largest_map = map_floats(stem_, max_batch);
  std::size_t largest_patches = stem_.patch_floats(max_batch);
  w->stem_z = floats(map_floats(stem_, max_batch));
  w->stem_a = floats(map_floats(stem_, max_batch));
  w->stem_stats = stats(stem_norm_);
  stem_.reserve(w->gemm, max_batch);
  for (const Block& b : blocks_) {
    ResNetWorkspace::BlockMaps m;
    m.z1 = floats(map_floats(b.conv1, max_batch));
    m.h1 = floats(map_floats(b.conv1, max_batch));
    m.z2 = floats(map_floats(b.conv2, max_batch));
    m.out = floats(map_floats(b.conv2, max_batch));
    m.stats1 = stats(b.norm1);
    m.stats2 = stats(b.norm2);
    w->blocks.push_back(std::move(m));
    for (const GemmConv* c : {&b.conv1, &b.conv2}) {
      largest_map = std::max(largest_map, map_floats(*c, max_batch));
      largest_map = std::max(largest_map, static_cast<std::size_t>(c->in_channels) * c->in_height *
                                              c->in_width * max_batch);
      largest_patches = std::max(largest_patches, c->patch_floats(max_batch));
      c->reserve(w->gemm, max_batch);
    }
  }
  w->patches = floats(largest_patches);
  for (Eigen::VectorXf& g : w->grad_maps)
    g = floats(largest_map);
  w->pooled = floats(static_cast<std::size_t>(head_.in) * max_batch);
  w->dpooled = floats(static_cast<std::size_t>(head_.in) * max_batch);
  w->logits = floats(static_cast<std::size_t>(head_.out) * max_batch);
  w->dlogits = floats(static_cast<std::size_t>(head_.out) * max_batch);
  head_.reserve(w->gemm, max_batch, true);
  return w;
}

ResNet::ResNetWorkspace& ResNet::workspace_for(Workspace& ws, const BatchView& batch) const {
  auto* w = dynamic_cast<ResNetWorkspace*>(&ws);
  DTSIM_ASSERT(w != nullptr && w->owner == this, "workspace was made by another model");
  DTSIM_ASSERT(batch.count >= 0 && batch.count <= w->max_batch,
               "batch larger than the workspace's max_batch");
  DTSIM_ASSERT(batch.num_features ==
                   config_.input_shape[0] * config_.input_shape[1] * config_.input_shape[2],
               "ResNet: batch has the wrong number of features");
  return *w;
}

namespace {

// Option A's shortcut as runs of offsets: f(block_offset, input_offset, length) for every
// row of every channel the input has (the block's added channels get nothing), the block's
// row holding `length` consecutive values and the input's every stride-th from input_offset.
// Where the block keeps its shape this is the identity, one run per row.
template <class F> void for_each_shortcut_row(const GemmConv& c, int n, F f) {
  const std::size_t out_plane = c.out_pixels() * static_cast<std::size_t>(n);
  const std::size_t in_plane = c.in_pixels() * static_cast<std::size_t>(n);
  for (int ch = 0; ch < c.in_channels; ++ch)
    for (int e = 0; e < n; ++e)
      for (int y = 0; y < c.out_height(); ++y)
        f(static_cast<std::size_t>(ch) * out_plane + static_cast<std::size_t>(e) * c.out_pixels() +
              static_cast<std::size_t>(y) * static_cast<std::size_t>(c.out_width()),
          static_cast<std::size_t>(ch) * in_plane + static_cast<std::size_t>(e) * c.in_pixels() +
              static_cast<std::size_t>(y * c.stride) * static_cast<std::size_t>(c.in_width),
          c.out_width());
}

} // namespace

// out += shortcut(in).
void ResNet::add_shortcut(const Block& b, const float* in, int n, float* out) const {
  const int stride = b.conv1.stride;
  for_each_shortcut_row(b.conv1, n, [&](std::size_t block, std::size_t input, int length) {
    for (int x = 0; x < length; ++x)
      out[block + static_cast<std::size_t>(x)] += in[input + static_cast<std::size_t>(x * stride)];
  });
}

// d_in += the shortcut's share of d_out (the transpose of add_shortcut).
void ResNet::shortcut_backward(const Block& b, const float* d_out, int n, float* d_in) const {
  const int stride = b.conv1.stride;
  for_each_shortcut_row(b.conv1, n, [&](std::size_t block, std::size_t input, int length) {
    for (int x = 0; x < length; ++x)
      d_in[input + static_cast<std::size_t>(x * stride)] +=
          d_out[block + static_cast<std::size_t>(x)];
  });
}

ConstMatMap ResNet::forward(std::span<const float> params, const BatchView& batch,
                            ResNetWorkspace& w) const {
  const int n = batch.count;
  const auto& s = config_.input_shape;
  stem_.forward(params, batch.features, MapLayout::dataset(s[0], s[1], s[2]), n, w.patches.data(),
                w.stem_z.data(), w.gemm);
  stem_norm_.forward(params, w.stem_z.data(), n, w.stem_a.data(), w.stem_stats.data());
  relu(w.stem_a.data(), map_floats(stem_, n));
  const float* in = w.stem_a.data();
  for (std::size_t k = 0; k < blocks_.size(); ++k) {
    const Block& b = blocks_[k];
    ResNetWorkspace::BlockMaps& m = w.blocks[k];
    b.conv1.forward(params, in, input_layout(b.conv1, n), n, w.patches.data(), m.z1.data(), w.gemm);
    b.norm1.forward(params, m.z1.data(), n, m.h1.data(), m.stats1.data());
    relu(m.h1.data(), map_floats(b.conv1, n));
    b.conv2.forward(params, m.h1.data(), input_layout(b.conv2, n), n, w.patches.data(), m.z2.data(),
                    w.gemm);
    b.norm2.forward(params, m.z2.data(), n, m.out.data(), m.stats2.data());
    add_shortcut(b, in, n, m.out.data());
    relu(m.out.data(), map_floats(b.conv2, n));
    in = m.out.data();
  }
  // Global average pool: pooled(c, e) is the mean of example e's channel c.
  const GemmConv& last = blocks_.back().conv2;
  const auto pixels = static_cast<Eigen::Index>(last.out_pixels());
  MatMap pooled = mat_map(w.pooled.data(), head_.in, n, head_.in);
  for (int c = 0; c < head_.in; ++c)
    for (int e = 0; e < n; ++e)
      pooled(c, e) = Eigen::Map<const Eigen::VectorXf>(in + (c * n + e) * pixels, pixels).sum() /
                     static_cast<float>(pixels);
  head_.forward(params, mat_map(static_cast<const float*>(w.pooled.data()), head_.in, n, head_.in),
                mat_map(w.logits.data(), head_.out, n, head_.out), w.gemm);
  return mat_map(static_cast<const float*>(w.logits.data()), head_.out, n, head_.out);
}

double ResNet::loss_and_grad(std::span<const float> params, const BatchView& batch,
                             std::span<float> grad, Workspace& ws) const {
  ResNetWorkspace& w = workspace_for(ws, batch);
  DTSIM_ASSERT(params.size() == num_params_ && grad.size() == num_params_,
               "ResNet: params or grad has the wrong size");
  DTSIM_ASSERT(batch.count >= 1, "ResNet: empty batch");
  const int n = batch.count;
  MatMap dlogits = mat_map(w.dlogits.data(), head_.out, n, head_.out);
  const double loss = softmax_xent_grad(forward(params, batch, w), batch.labels, dlogits);

  const ConstMatMap pooled =
      mat_map(static_cast<const float*>(w.pooled.data()), head_.in, n, head_.in);
  const ConstMatMap dz =
      mat_map(static_cast<const float*>(w.dlogits.data()), head_.out, n, head_.out);
  head_.backward_params(pooled, dz, grad, w.gemm);
  MatMap dpooled = mat_map(w.dpooled.data(), head_.in, n, head_.in);
  head_.backward_input(params, dz, dpooled, w.gemm);

  // dL/d(last block's output): the pooled gradient spread evenly over the pixels.
  float* d_out = w.grad_maps[0].data();
  float* d_tmp = w.grad_maps[1].data();
  float* d_in = w.grad_maps[2].data();
  const GemmConv& last = blocks_.back().conv2;
  const auto pixels = static_cast<Eigen::Index>(last.out_pixels());
  const float inv_pixels = 1.0f / static_cast<float>(pixels);
  for (int c = 0; c < head_.in; ++c)
    for (int e = 0; e < n; ++e)
      Eigen::Map<Eigen::VectorXf>(d_out + (c * n + e) * pixels, pixels)
          .setConstant(dpooled(c, e) * inv_pixels);

  for (std::size_t k = blocks_.size(); k-- > 0;) {
    const Block& b = blocks_[k];
    ResNetWorkspace::BlockMaps& m = w.blocks[k];
    const float* in = k == 0 ? w.stem_a.data() : w.blocks[k - 1].out.data();
    // Through the block's final ReLU; d_out is then dL/d(GN2 + shortcut).
    relu_grad(m.out.data(), d_out, map_floats(b.conv2, n));
    b.norm2.backward(params, m.z2.data(), m.stats2.data(), n, d_out, grad, d_tmp); // dL/dz2
    b.conv2.backward_params(m.h1.data(), input_layout(b.conv2, n), n, d_tmp, w.patches.data(), grad,
                            w.gemm);
    b.conv2.backward_input(params, d_tmp, n, w.patches.data(), d_in, w.gemm); // dL/dh1
    relu_grad(m.h1.data(), d_in, map_floats(b.conv1, n));
    b.norm1.backward(params, m.z1.data(), m.stats1.data(), n, d_in, grad, d_tmp); // dL/dz1
    b.conv1.backward_params(in, input_layout(b.conv1, n), n, d_tmp, w.patches.data(), grad, w.gemm);
    b.conv1.backward_input(params, d_tmp, n, w.patches.data(), d_in, w.gemm); // dL/d(input)
    shortcut_backward(b, d_out, n, d_in);
    std::swap(d_out, d_in); // the block's input is the previous block's output
  }
  relu_grad(w.stem_a.data(), d_out, map_floats(stem_, n));
  stem_norm_.backward(params, w.stem_z.data(), w.stem_stats.data(), n, d_out, grad, d_tmp);
  const auto& s = config_.input_shape;
  stem_.backward_params(batch.features, MapLayout::dataset(s[0], s[1], s[2]), n, d_tmp,
                        w.patches.data(), grad, w.gemm);
  return loss;
}

EvalResult ResNet::evaluate(std::span<const float> params, const BatchView& batch,
                            Workspace& ws) const {
  ResNetWorkspace& w = workspace_for(ws, batch);
  DTSIM_ASSERT(params.size() == num_params_, "ResNet::evaluate: params has the wrong size");
  if (batch.count == 0)
    return {};
  return softmax_xent_eval(forward(params, batch, w), batch.labels);
}

double ResNet::flops_per_example() const {
  // Multiply-adds (2 flops each) of the convolutions and the head: forward and weight
  // gradient everywhere, input gradient everywhere but the stem (its input is the data).
  // GroupNorm, ReLU, shortcuts and pooling are O(activations), not counted.
  double macs = stem_.macs_per_example() * 2.0;
  for (const Block& b : blocks_)
    macs += 3.0 * (b.conv1.macs_per_example() + b.conv2.macs_per_example());
  macs += 3.0 * head_.in * head_.out;
  return 2.0 * macs;
}

} // namespace dtsim
