// SPDX-License-Identifier: MIT
// The batched ResNet pass of DeviceResNet as one sequence of steps over an executor, and the
// per-element math of its kernels: shared by the CUDA executor (device_resnet.cu) and the
// host reference executor (host_resnet_ops.hpp) that tests run without a GPU. The network is
// models/resnet.hpp's (same layers, parameter layout and map layout); the dense head, the
// minibatch gather and the softmax cross-entropy are the MLP pass's (mlp_batch_math.hpp).
#pragma once

#include "cuda/conv_batch_math.hpp"
#include "cuda/mlp_batch_math.hpp"

#include <utility>

namespace dtsim::cuda {

// GroupNorm (models/group_norm.hpp): gamma (channels) then beta at `offset`.
struct NormShape {
  int channels = 0, groups = 1, pixels = 0;
  std::size_t offset = 0;
};

struct ResBlockShape {
  ConvShape conv1, conv2;
  NormShape norm1, norm2;
};

struct ResNetBatchShape {
  int channels = 0, height = 0, width = 0; // input image
  ConvShape stem;
  NormShape stem_norm;
  std::vector<ResBlockShape> blocks;
  BatchLayer head; // classes x (last stage's channels), then the bias
  std::size_t num_params = 0;
  int features() const { return channels * height * width; }
};

// Where a batch lives. Per node b, every buffer holds node b's block at b times its per-node
// size for the batch's n examples (params and grads num_params floats; each map its conv's
// out_map(n); stats 2 * groups * n; patches the largest conv's patches(n); grad_maps the
// largest map; norm_sums 2 * 64 * n; pooled and dpooled 64 * n; logits and dlogits
// classes * n).
struct ResNetBatchBuffers : BatchCommon {
  float* x = nullptr; // the gathered minibatches, dataset layout
  float *stem_z = nullptr, *stem_a = nullptr, *stem_stats = nullptr;
  // Per block: z1, h1, z2, out, stats1, stats2.
  float* const* block_maps = nullptr;
  float* patches = nullptr;
  float* grad_maps[3] = {nullptr, nullptr, nullptr};
  float* norm_sums = nullptr;
  float *pooled = nullptr, *dpooled = nullptr, *logits = nullptr, *dlogits = nullptr;
};
inline constexpr int kBlockMaps = 6;

// The batch's float buffers, in the order bind_resnet_buffers takes them: their floats per
// node for minibatches of n examples. Block maps come last (kBlockMaps per block).
enum ResNetBuffer {
  kX,
  kStemZ,
  kStemA,
  kStemStats,
  kPatches,
  kGradMap0,
  kGradMap1,
  kGradMap2,
  kNormSums,
  kPooled,
  kDPooled,
  kLogits,
  kDLogits,
  kFirstBlockMap
};
inline std::vector<std::size_t> resnet_buffer_floats(const ResNetBatchShape& s, int n) {
  const auto n_ = static_cast<std::size_t>(n);
  auto stats = [n_](const NormShape& g) { return 2 * static_cast<std::size_t>(g.groups) * n_; };
  std::size_t patches = s.stem.patches(n), map = s.stem.out_map(n), channels = s.stem.out;
  for (const ResBlockShape& b : s.blocks)
    for (const ConvShape* c : {&b.conv1, &b.conv2}) {
      patches = patches > c->patches(n) ? patches : c->patches(n);
      map = map > c->out_map(n) ? map : c->out_map(n);
      map = map > c->in_map(n) ? map : c->in_map(n);
      channels = channels > static_cast<std::size_t>(c->out) ? channels : c->out;
    }
  const std::size_t pooled = static_cast<std::size_t>(s.head.in) * n_;
  const std::size_t logits = static_cast<std::size_t>(s.head.out) * n_;
  std::vector<std::size_t> floats{static_cast<std::size_t>(s.features()) * n_,
                                  s.stem.out_map(n),
                                  s.stem.out_map(n),
                                  stats(s.stem_norm),
                                  patches,
                                  map,
                                  map,
                                  map,
                                  2 * channels * n_,
                                  pooled,
                                  pooled,
                                  logits,
                                  logits};
  for (const ResBlockShape& b : s.blocks)
    for (std::size_t f : {b.conv1.out_map(n), b.conv1.out_map(n), b.conv2.out_map(n),
                          b.conv2.out_map(n), stats(b.norm1), stats(b.norm2)})
      floats.push_back(f);
  return floats;
}

// The evaluation pass's buffers (run_resnet_eval): resnet_buffer_floats' list with only
// what the forward pass writes kept (the examples are shared, not gathered; nothing
// backward).
inline std::vector<std::size_t> resnet_eval_buffer_floats(const ResNetBatchShape& s, int n) {
  std::vector<std::size_t> floats = resnet_buffer_floats(s, n);
  for (const ResNetBuffer unused : {kX, kGradMap0, kGradMap1, kGradMap2, kDPooled, kDLogits})
    floats[unused] = 0;
  return floats;
}

// buf's float buffers from arrays (resnet_buffer_floats' order; `arrays` must outlive buf,
// which points into it for the block maps). Training set, labels, params, grads, indices
// and losses are the caller's to set.
inline void bind_resnet_buffers(float* const* arrays, ResNetBatchBuffers& buf) {
  buf.x = arrays[kX];
  buf.stem_z = arrays[kStemZ];
  buf.stem_a = arrays[kStemA];
  buf.stem_stats = arrays[kStemStats];
  buf.patches = arrays[kPatches];
  for (int k = 0; k < 3; ++k)
    buf.grad_maps[k] = arrays[kGradMap0 + k];
  buf.norm_sums = arrays[kNormSums];
  buf.pooled = arrays[kPooled];
  buf.dpooled = arrays[kDPooled];
  buf.logits = arrays[kLogits];
  buf.dlogits = arrays[kDLogits];
  buf.block_maps = arrays + kFirstBlockMap;
}

// ---- The kernels' math, one element each (b: node; i: element of the node's block). ----

// Offset of example e's channel c in one node's batch-major map.
DTSIM_HD inline std::size_t map_at(const NormShape& g, int n, int e, int c) {
  return (static_cast<std::size_t>(c) * n + e) * g.pixels;
}

// GroupNorm statistics (mean and 1/std of each example's group, two passes) in four steps:
// a thread per (example, channel) sums a channel's pixels, then one per (example, group)
// sums its channels' partial sums in channel order; first for the mean, then for the
// squared deviations from it. A thread per (example, group) walking the whole group would
// leave most of a GPU idle (64 threads per node on ResNet-20).
//
// Steps 1 and 3, t = e * channels + c: the sum over the channel's pixels of z (step 1) or
// of (z - mean)^2 (step 3, `squares`), into partial[2 t] or partial[2 t + 1].
DTSIM_HD inline void norm_channel_sum_element(const float* z, const float* stats,
                                              const NormShape& g, int n, bool squares,
                                              float* partial, int b, int t) {
  const int e = t / g.channels, c = t % g.channels;
  const float* map =
      z + static_cast<std::size_t>(b) * g.channels * g.pixels * n + map_at(g, n, e, c);
  float sum = 0.0f;
  if (squares) {
    const float mean = stats[(static_cast<std::size_t>(b) * n * g.groups + e * g.groups +
                              c / (g.channels / g.groups)) *
                             2];
    for (int p = 0; p < g.pixels; ++p) {
      const float d = map[p] - mean;
      sum += d * d;
    }
  } else {
    for (int p = 0; p < g.pixels; ++p)
      sum += map[p];
  }
  partial[(static_cast<std::size_t>(b) * n * g.channels + t) * 2 + (squares ? 1 : 0)] = sum;
}

// Steps 2 and 4, t = e * groups + group: the mean (step 2) or 1/std (step 4, `squares`) of
// the group from its channels' partial sums, into stats[2 t] or stats[2 t + 1].
DTSIM_HD inline void norm_group_stat_element(const float* partial, const NormShape& g, int n,
                                             bool squares, float* stats, int b, int t) {
  const int e = t / g.groups, group = t % g.groups;
  const int per_group = g.channels / g.groups;
  const float* sums =
      partial +
      (static_cast<std::size_t>(b) * n * g.channels + static_cast<std::size_t>(e) * g.channels) * 2;
  float sum = 0.0f;
  for (int c = group * per_group; c < (group + 1) * per_group; ++c)
    sum += sums[2 * c + (squares ? 1 : 0)];
  const auto count = static_cast<float>(per_group * g.pixels);
  float* s = stats + (static_cast<std::size_t>(b) * n * g.groups + t) * 2;
  if (squares)
    s[1] = 1.0f / sqrtf(sum / count + 1e-5f); // GroupNorm::kEps
  else
    s[0] = sum / count;
}

// y = gamma (z - mean) / std + beta, then ReLU where `relu`.
DTSIM_HD inline void norm_apply_element(const float* z, const float* stats, const float* params,
                                        std::size_t num_params, const NormShape& g, int n,
                                        bool relu, float* y, int b, std::size_t i) {
  const std::size_t plane = static_cast<std::size_t>(g.pixels) * n;
  const int c = static_cast<int>(i / plane);
  const int e = static_cast<int>(i % plane / g.pixels);
  const float* s =
      stats +
      (static_cast<std::size_t>(b) * n * g.groups + e * g.groups + c / (g.channels / g.groups)) * 2;
  const float* gamma = params + b * num_params + g.offset;
  const std::size_t at = b * plane * g.channels + i;
  const float v = (z[at] - s[0]) * (gamma[c] * s[1]) + gamma[g.channels + c];
  y[at] = relu && !(v > 0.0f) ? 0.0f : v;
}

// Per (example, channel) t = e * channels + c: sum(dy * xhat) and sum(dy) over the pixels,
// into sums (2 floats per t).
DTSIM_HD inline void norm_sums_element(const float* z, const float* stats, const float* dy,
                                       const NormShape& g, int n, float* sums, int b, int t) {
  const int e = t / g.channels, c = t % g.channels;
  const std::size_t node = static_cast<std::size_t>(b) * g.channels * g.pixels * n;
  const float* s =
      stats +
      (static_cast<std::size_t>(b) * n * g.groups + e * g.groups + c / (g.channels / g.groups)) * 2;
  float dg = 0.0f, db = 0.0f;
  for (int p = 0; p < g.pixels; ++p) {
    const std::size_t at = node + map_at(g, n, e, c) + p;
    dg += dy[at] * ((z[at] - s[0]) * s[1]);
    db += dy[at];
  }
  float* out = sums + (static_cast<std::size_t>(b) * n * g.channels + t) * 2;
  out[0] = dg;
  out[1] = db;
}

// dgamma and dbeta of channel c: the examples' sums in example order.
DTSIM_HD inline void norm_param_grad_element(const float* sums, const NormShape& g, int n,
                                             float* grads, std::size_t num_params, int b, int c) {
  float dg = 0.0f, db = 0.0f;
  for (int e = 0; e < n; ++e) {
    const float* s = sums + (static_cast<std::size_t>(b) * n * g.channels +
                             static_cast<std::size_t>(e) * g.channels + c) *
                                2;
    dg += s[0];
    db += s[1];
  }
  grads[b * num_params + g.offset + c] = dg;
  grads[b * num_params + g.offset + g.channels + c] = db;
}

// dz = rstd (gamma dy - mean(gamma dy) - xhat mean(gamma dy xhat)), the means over the group.
DTSIM_HD inline void norm_input_grad_element(const float* z, const float* stats, const float* dy,
                                             const float* sums, const float* params,
                                             std::size_t num_params, const NormShape& g, int n,
                                             float* dz, int b, std::size_t i) {
  const std::size_t plane = static_cast<std::size_t>(g.pixels) * n;
  const int c = static_cast<int>(i / plane);
  const int e = static_cast<int>(i % plane / g.pixels);
  const int per_group = g.channels / g.groups;
  const int c0 = c / per_group * per_group;
  const float* s =
      stats + (static_cast<std::size_t>(b) * n * g.groups + e * g.groups + c / per_group) * 2;
  const float* gamma = params + b * num_params + g.offset;
  float sum_dxhat = 0.0f, sum_dxhat_xhat = 0.0f;
  for (int k = c0; k < c0 + per_group; ++k) {
    const float* ks = sums + (static_cast<std::size_t>(b) * n * g.channels +
                              static_cast<std::size_t>(e) * g.channels + k) *
                                 2;
    sum_dxhat += gamma[k] * ks[1];
    sum_dxhat_xhat += gamma[k] * ks[0];
  }
  const auto count = static_cast<float>(per_group * g.pixels);
  const std::size_t at = b * plane * g.channels + i;
  const float xhat = (z[at] - s[0]) * s[1];
  dz[at] = s[1] * (gamma[c] * dy[at] - sum_dxhat / count - xhat * (sum_dxhat_xhat / count));
}

// The block's output: out = ReLU(out + shortcut(in)), the shortcut being He et al.'s option
// A (the input subsampled by the block's stride, channels past the input's zero).
DTSIM_HD inline void shortcut_relu_element(const float* in, const ConvShape& c, int n, float* out,
                                           int b, std::size_t i) {
  const std::size_t plane = c.out_pixels() * n;
  const int ch = static_cast<int>(i / plane);
  const std::size_t at = b * c.out_map(n) + i;
  float v = out[at];
  if (ch < c.in) {
    const int e = static_cast<int>(i % plane / c.out_pixels());
    const int p = static_cast<int>(i % c.out_pixels());
    const int iy = p / c.out_width() * c.stride, ix = p % c.out_width() * c.stride;
    v += in[b * c.in_map(n) + (static_cast<std::size_t>(ch) * n + e) * c.in_pixels() +
            static_cast<std::size_t>(iy) * c.in_width + ix];
  }
  out[at] = v > 0.0f ? v : 0.0f;
}

// d_in += the shortcut's share of d_out (the transpose of the subsampling).
DTSIM_HD inline void shortcut_backward_element(const float* d_out, const ConvShape& c, int n,
                                               float* d_in, int b, std::size_t i) {
  const std::size_t plane = c.in_pixels() * n;
  const int ch = static_cast<int>(i / plane);
  const int e = static_cast<int>(i % plane / c.in_pixels());
  const int p = static_cast<int>(i % c.in_pixels());
  const int iy = p / c.in_width, ix = p % c.in_width;
  if (iy % c.stride != 0 || ix % c.stride != 0)
    return;
  const int oy = iy / c.stride, ox = ix / c.stride;
  if (oy >= c.out_height() || ox >= c.out_width())
    return;
  d_in[b * c.in_map(n) + i] +=
      d_out[b * c.out_map(n) + (static_cast<std::size_t>(ch) * n + e) * c.out_pixels() +
            static_cast<std::size_t>(oy) * c.out_width() + ox];
}

// pooled (channels x n, column-major) t = e * channels + ch: the mean of that channel's map.
DTSIM_HD inline void average_pool_element(const float* map, int channels, int pixels, int n,
                                          float* pooled, int b, int t) {
  const int e = t / channels, ch = t % channels;
  const float* m = map + (static_cast<std::size_t>(b) * channels * n + ch * n + e) * pixels;
  float sum = 0.0f;
  for (int p = 0; p < pixels; ++p)
    sum += m[p];
  pooled[static_cast<std::size_t>(b) * channels * n + t] = sum / static_cast<float>(pixels);
}

// d_map = dpooled spread evenly over the pixels.
DTSIM_HD inline void average_pool_backward_element(const float* dpooled, int channels, int pixels,
                                                   int n, float* d_map, int b, std::size_t i) {
  const std::size_t plane = static_cast<std::size_t>(pixels) * n;
  const int ch = static_cast<int>(i / plane);
  const int e = static_cast<int>(i % plane / pixels);
  d_map[b * plane * channels + i] = dpooled[static_cast<std::size_t>(b) * channels * n +
                                            static_cast<std::size_t>(e) * channels + ch] *
                                    (1.0f / static_cast<float>(pixels));
}

// ---- The pass, over an executor. ----

// Ops provides, besides run_mlp_batch's gemm, gather, add_bias, softmax_xent, mean_loss,
// bias_gradient and relu_backward, each over `count` nodes: im2col(x, view, conv, n,
// patches, count), col2im(dpatches, conv, n, dx, count), norm_stats(z, norm, n, partial,
// stats, count) (the four statistics steps in order; partial: scratch of 2 * channels * n
// floats per node), norm_apply(z, stats, params, num_params, norm, n, relu, y, count),
// norm_backward(z, stats, dy, sums, params, grads, num_params, norm, n, dz, count) (the
// three norm gradient steps in order), shortcut_relu(in, conv, n, out, count),
// shortcut_backward(d_out, conv, n, d_in, count), average_pool(map, channels, pixels, n,
// pooled, count) and average_pool_backward(dpooled, channels, pixels, n, d_map, count).
template <class Ops> class ResNetBatchPass {
public:
  // shared_x: every node's input is these n examples (features x n, the dataset's layout),
  // read in place, not gathered (an evaluation's).
  ResNetBatchPass(Ops& ops, const ResNetBatchShape& shape, const ResNetBatchBuffers& buf, int count,
                  int n, const float* shared_x = nullptr)
      : ops_(ops), s_(shape), buf_(buf), count_(count), n_(n),
        P_(static_cast<long long>(shape.num_params)), shared_x_(shared_x) {}

  // Every node's loss sum and correct count on the shared examples (eval's labels and
  // outputs; the activations in buf_).
  void evaluate(const MlpEvalBuffers& eval) {
    forward();
    ops_.eval_columns(eval, buf_.logits, s_.head.out, n_, count_);
    ops_.eval_nodes(eval, n_, count_);
  }

  void run() {
    MlpBatchBuffers mlp; // the gather and the loss steps read these
    static_cast<BatchCommon&>(mlp) = buf_;
    mlp.x = buf_.x;
    ops_.gather(mlp, s_.features(), n_, count_);
    forward();
    const BatchLayer& head = s_.head;
    ops_.softmax_xent(buf_.logits, head.out, n_, mlp, buf_.dlogits, count_);
    ops_.mean_loss(mlp, n_, count_);
    backward();
  }

private:
  float* block_map(std::size_t block, int which) const {
    return buf_.block_maps[block * kBlockMaps + static_cast<std::size_t>(which)];
  }
  const float* last_map() const { return block_map(s_.blocks.size() - 1, 3); }

  // z = conv(x): im2col, then one GEMM over the nodes (patches x W).
  void conv_forward(const ConvShape& c, const float* x, MapView v, float* z) {
    const int rows = static_cast<int>(c.out_pixels()) * n_;
    ops_.im2col(x, v, c, n_, buf_.patches, count_);
    ops_.gemm(StridedGemm{false, false, rows, c.out, c.patch(), buf_.patches, rows,
                          static_cast<long long>(c.patches(n_)), buf_.params + c.offset, c.patch(),
                          P_, z, rows, static_cast<long long>(c.out_map(n_)), count_});
  }
  // dW = patches(x)^T dz, written into the nodes' gradients.
  void conv_backward_params(const ConvShape& c, const float* x, MapView v, const float* dz) {
    const int rows = static_cast<int>(c.out_pixels()) * n_;
    ops_.im2col(x, v, c, n_, buf_.patches, count_);
    ops_.gemm(StridedGemm{true, false, c.patch(), c.out, rows, buf_.patches, rows,
                          static_cast<long long>(c.patches(n_)), dz, rows,
                          static_cast<long long>(c.out_map(n_)), buf_.grads + c.offset, c.patch(),
                          P_, count_});
  }
  // dx = conv^T(dz): dpatches = dz W^T, then col2im.
  void conv_backward_input(const ConvShape& c, const float* dz, float* dx) {
    const int rows = static_cast<int>(c.out_pixels()) * n_;
    ops_.gemm(StridedGemm{false, true, rows, c.patch(), c.out, dz, rows,
                          static_cast<long long>(c.out_map(n_)), buf_.params + c.offset, c.patch(),
                          P_, buf_.patches, rows, static_cast<long long>(c.patches(n_)), count_});
    ops_.col2im(buf_.patches, c, n_, dx, count_);
  }
  void norm_forward(const NormShape& g, const float* z, float* stats, bool relu, float* y) {
    ops_.norm_stats(z, g, n_, buf_.norm_sums, stats, count_);
    ops_.norm_apply(z, stats, buf_.params, s_.num_params, g, n_, relu, y, count_);
  }
  void norm_backward(const NormShape& g, const float* z, const float* stats, const float* dy,
                     float* dz) {
    ops_.norm_backward(z, stats, dy, buf_.norm_sums, buf_.params, buf_.grads, s_.num_params, g, n_,
                       dz, count_);
  }

  void forward() {
    const ConvShape& stem = s_.stem;
    MapView input = MapView::dataset(stem, n_);
    if (shared_x_ != nullptr)
      input.node = 0; // every node reads the same examples
    conv_forward(stem, shared_x_ != nullptr ? shared_x_ : buf_.x, input, buf_.stem_z);
    norm_forward(s_.stem_norm, buf_.stem_z, buf_.stem_stats, true, buf_.stem_a);
    const float* in = buf_.stem_a;
    for (std::size_t k = 0; k < s_.blocks.size(); ++k) {
      const ResBlockShape& b = s_.blocks[k];
      float *z1 = block_map(k, 0), *h1 = block_map(k, 1), *z2 = block_map(k, 2),
            *out = block_map(k, 3);
      conv_forward(b.conv1, in, MapView::batch_major(b.conv1, n_), z1);
      norm_forward(b.norm1, z1, block_map(k, 4), true, h1);
      conv_forward(b.conv2, h1, MapView::batch_major(b.conv2, n_), z2);
      norm_forward(b.norm2, z2, block_map(k, 5), false, out);
      ops_.shortcut_relu(in, b.conv1, n_, out, count_);
      in = out;
    }
    const ConvShape& last = s_.blocks.back().conv2;
    const BatchLayer& head = s_.head;
    ops_.average_pool(in, head.in, static_cast<int>(last.out_pixels()), n_, buf_.pooled, count_);
    ops_.gemm(StridedGemm{false, false, head.out, n_, head.in, buf_.params + head.offset, head.out,
                          P_, buf_.pooled, head.in, static_cast<long long>(head.in) * n_,
                          buf_.logits, head.out, static_cast<long long>(head.out) * n_, count_});
    ops_.add_bias(buf_.logits, head.out, n_, buf_.params, s_.num_params, head.bias_offset(), false,
                  count_);
  }

  void backward() {
    const BatchLayer& head = s_.head;
    const auto pooled_stride = static_cast<long long>(head.in) * n_;
    const auto logits_stride = static_cast<long long>(head.out) * n_;
    ops_.gemm(StridedGemm{false, true, head.out, head.in, n_, buf_.dlogits, head.out, logits_stride,
                          buf_.pooled, head.in, pooled_stride, buf_.grads + head.offset, head.out,
                          P_, count_});
    ops_.bias_gradient(buf_.dlogits, head.out, n_, buf_.grads, s_.num_params, head.bias_offset(),
                       count_);
    ops_.gemm(StridedGemm{true, false, head.in, n_, head.out, buf_.params + head.offset, head.out,
                          P_, buf_.dlogits, head.out, logits_stride, buf_.dpooled, head.in,
                          pooled_stride, count_});
    float* d_out = buf_.grad_maps[0];
    float* d_tmp = buf_.grad_maps[1];
    float* d_in = buf_.grad_maps[2];
    const ConvShape& last = s_.blocks.back().conv2;
    ops_.average_pool_backward(buf_.dpooled, head.in, static_cast<int>(last.out_pixels()), n_,
                               d_out, count_);
    for (std::size_t k = s_.blocks.size(); k-- > 0;) {
      const ResBlockShape& b = s_.blocks[k];
      const float* in = k == 0 ? buf_.stem_a : block_map(k - 1, 3);
      ops_.relu_backward(block_map(k, 3), d_out,
                         static_cast<std::size_t>(count_) * b.conv2.out_map(n_));
      norm_backward(b.norm2, block_map(k, 2), block_map(k, 5), d_out, d_tmp); // dL/dz2
      conv_backward_params(b.conv2, block_map(k, 1), MapView::batch_major(b.conv2, n_), d_tmp);
      conv_backward_input(b.conv2, d_tmp, d_in); // dL/dh1
      ops_.relu_backward(block_map(k, 1), d_in,
                         static_cast<std::size_t>(count_) * b.conv1.out_map(n_));
      norm_backward(b.norm1, block_map(k, 0), block_map(k, 4), d_in, d_tmp); // dL/dz1
      conv_backward_params(b.conv1, in, MapView::batch_major(b.conv1, n_), d_tmp);
      conv_backward_input(b.conv1, d_tmp, d_in); // dL/d(block input)
      ops_.shortcut_backward(d_out, b.conv1, n_, d_in, count_);
      std::swap(d_out, d_in);
    }
    const ConvShape& stem = s_.stem;
    ops_.relu_backward(buf_.stem_a, d_out, static_cast<std::size_t>(count_) * stem.out_map(n_));
    norm_backward(s_.stem_norm, buf_.stem_z, buf_.stem_stats, d_out, d_tmp);
    conv_backward_params(stem, buf_.x, MapView::dataset(stem, n_), d_tmp);
  }

  Ops& ops_;
  const ResNetBatchShape& s_;
  const ResNetBatchBuffers& buf_;
  int count_, n_;
  long long P_;
  const float* shared_x_;
};

// Gradients of the mean loss of `count` nodes' minibatches of n examples into buf.grads,
// the losses into buf.loss.
template <class Ops>
void run_resnet_batch(Ops& ops, const ResNetBatchShape& shape, const ResNetBatchBuffers& buf,
                      int count, int n) {
  ResNetBatchPass<Ops>(ops, shape, buf, count, n).run();
}

// Every node's model on the same n evaluation examples (eval.x, the dataset's layout; its
// labels, params and outputs as run_mlp_eval's): scratch holds resnet_eval_buffer_floats'
// buffers for `count` nodes.
template <class Ops>
void run_resnet_eval(Ops& ops, const ResNetBatchShape& shape, float* const* scratch,
                     const MlpEvalBuffers& eval, int count, int n) {
  ResNetBatchBuffers buf;
  bind_resnet_buffers(scratch, buf);
  buf.params = eval.params;
  ResNetBatchPass<Ops>(ops, shape, buf, count, n, eval.x).evaluate(eval);
}

} // namespace dtsim::cuda
