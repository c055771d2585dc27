// SPDX-License-Identifier: MIT
// The batched LeNet/CNN pass (models/cnn.hpp's network and parameter layout) as one sequence
// of steps over an executor, and the per-element math of its own kernels: [conv + bias,
// ReLU, 2x2 max pool] stages as im2col GEMMs over the nodes, then the MLP pass's dense stack
// and loss. Shared by the CUDA executor (device_cnn.cu) and the host executor
// (host_cnn_ops.hpp).
#pragma once

#include "cuda/conv_batch_math.hpp"
#include "cuda/mlp_batch_math.hpp"

namespace dtsim::cuda {

// A conv stage: stride 1; W as kernel x kernel x in x out (out fastest, so a column-major
// out x patch matrix) at conv.offset, then the bias; the 2x2 max pool of its output after the
// ReLU (odd last rows and columns dropped).
struct CnnStageShape {
  ConvShape conv;
  DTSIM_HD std::size_t bias_offset() const {
    return conv.offset + static_cast<std::size_t>(conv.patch()) * conv.out;
  }
  DTSIM_HD int pooled_height() const { return conv.out_height() / 2; }
  DTSIM_HD int pooled_width() const { return conv.out_width() / 2; }
  DTSIM_HD std::size_t pooled_pixels() const {
    return static_cast<std::size_t>(pooled_height()) * pooled_width();
  }
  DTSIM_HD std::size_t pooled_map(int n) const {
    return pooled_pixels() * conv.out * static_cast<std::size_t>(n);
  }
};

struct CnnBatchShape {
  int channels = 0, height = 0, width = 0; // input image
  std::vector<CnnStageShape> stages;
  std::vector<BatchLayer> dense; // hidden layers with ReLU, then the classes
  std::size_t num_params = 0;
  int features() const { return channels * height * width; }
  // The dense stack's input: the last pooled map flattened, (y * width + x) * channels + c.
  int flat_features() const {
    return static_cast<int>(stages.back().pooled_pixels()) * stages.back().conv.out;
  }
};

// The batch's float buffers, in the order bind_cnn_buffers takes them; per stage its conv
// output z and pooled map a follow kCnnFirstStageMap, then each dense layer's output.
enum CnnBuffer {
  kCnnX,
  kCnnPatches,
  kCnnFlat,
  kCnnDFlat,
  kCnnDelta0,
  kCnnDelta1,
  kCnnDPooled,
  kCnnDZ,
  kCnnFirstStageMap
};

inline std::vector<std::size_t> cnn_buffer_floats(const CnnBatchShape& s, int n) {
  const auto n_ = static_cast<std::size_t>(n);
  std::size_t patches = 0, pooled = 0, z = 0, widest = 0;
  for (const CnnStageShape& st : s.stages) {
    patches = patches > st.conv.patches(n) ? patches : st.conv.patches(n);
    pooled = pooled > st.pooled_map(n) ? pooled : st.pooled_map(n);
    z = z > st.conv.out_map(n) ? z : st.conv.out_map(n);
  }
  for (const BatchLayer& l : s.dense)
    widest = widest > static_cast<std::size_t>(l.out) ? widest : l.out;
  const std::size_t flat = static_cast<std::size_t>(s.flat_features()) * n_;
  std::vector<std::size_t> floats{static_cast<std::size_t>(s.features()) * n_,
                                  patches,
                                  flat,
                                  flat,
                                  widest * n_,
                                  widest * n_,
                                  pooled,
                                  z};
  for (const CnnStageShape& st : s.stages) {
    floats.push_back(st.conv.out_map(n));
    floats.push_back(st.pooled_map(n));
  }
  for (const BatchLayer& l : s.dense)
    floats.push_back(static_cast<std::size_t>(l.out) * n_);
  return floats;
}

// The evaluation pass's buffers (run_cnn_eval): cnn_buffer_floats' list with only what the
// forward pass writes kept (the examples are shared, not gathered; nothing backward).
inline std::vector<std::size_t> cnn_eval_buffer_floats(const CnnBatchShape& s, int n) {
  std::vector<std::size_t> floats = cnn_buffer_floats(s, n);
  for (const CnnBuffer unused : {kCnnX, kCnnDFlat, kCnnDelta0, kCnnDelta1, kCnnDPooled, kCnnDZ})
    floats[unused] = 0;
  return floats;
}

// ---- The kernels' math, one element each (b: node; i: element of the node's block). ----

// z += the stage's bias (z batch-major: channel-major over the examples).
DTSIM_HD inline void conv_bias_element(float* z, const CnnStageShape& s, int n, const float* params,
                                       std::size_t num_params, int b, std::size_t i) {
  const int c = static_cast<int>(i / (s.conv.out_pixels() * n));
  z[b * s.conv.out_map(n) + i] += params[b * num_params + s.bias_offset() + c];
}

// The four values of pooling window (py, px) of channel c, example e: (0,0), (0,1), (1,0),
// (1,1), the order in which the CPU model routes a tie's gradient.
DTSIM_HD inline void pool_window(const float* z, const CnnStageShape& s, int n, int b, int c, int e,
                                 int py, int px, float v[4]) {
  const int w = s.conv.out_width();
  const float* at = z + b * s.conv.out_map(n) +
                    (static_cast<std::size_t>(c) * n + e) * s.conv.out_pixels() +
                    static_cast<std::size_t>(2 * py) * w + 2 * px;
  v[0] = at[0];
  v[1] = at[1];
  v[2] = at[w];
  v[3] = at[w + 1];
}

DTSIM_HD inline float max4(const float v[4]) {
  const float a = v[0] > v[1] ? v[0] : v[1];
  const float c = v[2] > v[3] ? v[2] : v[3];
  return a > c ? a : c;
}

// a = max(max of the window, 0): ReLU and pooling (they commute), one pooled value.
DTSIM_HD inline void relu_max_pool_element(const float* z, const CnnStageShape& s, int n, float* a,
                                           int b, std::size_t i) {
  const std::size_t plane = s.pooled_pixels() * n;
  const int c = static_cast<int>(i / plane);
  const int e = static_cast<int>(i % plane / s.pooled_pixels());
  const int p = static_cast<int>(i % s.pooled_pixels());
  float v[4];
  pool_window(z, s, n, b, c, e, p / s.pooled_width(), p % s.pooled_width(), v);
  const float m = max4(v);
  a[b * s.pooled_map(n) + i] = m > 0.0f ? m : 0.0f;
}

// dz of one conv output: da of its window if it is the window's first maximum and that
// maximum passed the ReLU, else 0 (also for rows and columns no window covers).
DTSIM_HD inline void max_pool_backward_element(const float* z, const float* da,
                                               const CnnStageShape& s, int n, float* dz, int b,
                                               std::size_t i) {
  const std::size_t plane = s.conv.out_pixels() * n;
  const int c = static_cast<int>(i / plane);
  const int e = static_cast<int>(i % plane / s.conv.out_pixels());
  const int p = static_cast<int>(i % s.conv.out_pixels());
  const int y = p / s.conv.out_width(), x = p % s.conv.out_width();
  float d = 0.0f;
  if (y / 2 < s.pooled_height() && x / 2 < s.pooled_width()) {
    float v[4];
    pool_window(z, s, n, b, c, e, y / 2, x / 2, v);
    const float m = max4(v);
    int first = 0; // bounded: a NaN maximum equals none of the four
    while (first < 3 && !(v[first] == m))
      ++first;
    if (m > 0.0f && first == (y % 2) * 2 + x % 2)
      d = da[b * s.pooled_map(n) + (static_cast<std::size_t>(c) * n + e) * s.pooled_pixels() +
             static_cast<std::size_t>(y / 2) * s.pooled_width() + x / 2];
  }
  dz[b * s.conv.out_map(n) + i] = d;
}

// The bias gradient of output channel c: dz summed over examples and pixels, in order.
DTSIM_HD inline void conv_bias_gradient_element(const float* dz, const CnnStageShape& s, int n,
                                                float* grads, std::size_t num_params, int b,
                                                int c) {
  const std::size_t count = s.conv.out_pixels() * n;
  const float* row = dz + b * s.conv.out_map(n) + static_cast<std::size_t>(c) * count;
  float sum = 0.0f;
  for (std::size_t k = 0; k < count; ++k)
    sum += row[k];
  grads[b * num_params + s.bias_offset() + c] = sum;
}

// flat (features x n, column-major; feature (y * width + x) * channels + c) from the last
// pooled map, or (to_map) the map from flat.
DTSIM_HD inline void flatten_element(const CnnStageShape& s, int n, float* map, float* flat,
                                     bool to_map, int b, std::size_t i) {
  const int features = static_cast<int>(s.pooled_pixels()) * s.conv.out;
  const int e = static_cast<int>(i / features);
  const int f = static_cast<int>(i % features);
  const int c = f % s.conv.out, p = f / s.conv.out;
  float* m =
      map + b * s.pooled_map(n) + (static_cast<std::size_t>(c) * n + e) * s.pooled_pixels() + p;
  float* v = flat + static_cast<std::size_t>(b) * features * n + i;
  if (to_map)
    *m = *v;
  else
    *v = *m;
}

// ---- The pass, over an executor. ----

// Ops provides run_mlp_batch's steps, im2col and col2im (as for the ResNet pass) and, each
// over `count` nodes: conv_bias(z, stage, n, params, num_params, count),
// relu_max_pool(z, stage, n, a, count), max_pool_backward(z, da, stage, n, dz, count),
// conv_bias_gradient(dz, stage, n, grads, num_params, count) and flatten(stage, n, map,
// flat, to_map, count).
template <class Ops> class CnnBatchPass {
public:
  // shared_x: every node's input is these n examples (features x n, the dataset's layout),
  // read in place, not gathered (an evaluation's).
  CnnBatchPass(Ops& ops, const CnnBatchShape& shape, float* const* scratch, const BatchCommon& c,
               int count, int n, const float* shared_x = nullptr)
      : ops_(ops), s_(shape), scratch_(scratch), c_(c), count_(count), n_(n),
        P_(static_cast<long long>(shape.num_params)), shared_x_(shared_x) {}

  // Every node's loss sum and correct count on the shared examples (buf's labels, params and
  // per-example and per-node outputs; buf.x and buf.act unused: the examples are shared_x,
  // the activations the scratch buffers).
  void evaluate(const MlpEvalBuffers& buf) {
    forward();
    const std::size_t last = s_.dense.size() - 1;
    ops_.eval_columns(buf, dense_out(last), s_.dense[last].out, n_, count_);
    ops_.eval_nodes(buf, n_, count_);
  }

  void run() {
    MlpBatchBuffers mlp; // the gather and the loss steps read these
    static_cast<BatchCommon&>(mlp) = c_;
    mlp.x = scratch_[kCnnX];
    ops_.gather(mlp, s_.features(), n_, count_);
    forward();
    const std::size_t last = s_.dense.size() - 1;
    ops_.softmax_xent(dense_out(last), s_.dense[last].out, n_, mlp, delta(last), count_);
    ops_.mean_loss(mlp, n_, count_);
    backward();
  }

private:
  float* z(std::size_t stage) const { return scratch_[kCnnFirstStageMap + 2 * stage]; }
  float* pooled(std::size_t stage) const { return scratch_[kCnnFirstStageMap + 2 * stage + 1]; }
  float* dense_out(std::size_t l) const {
    return scratch_[kCnnFirstStageMap + 2 * s_.stages.size() + l];
  }
  float* delta(std::size_t l) const { return scratch_[kCnnDelta0 + l % 2]; }
  // Stage s's input and how the kernels address it.
  const float* stage_input(std::size_t s) const {
    if (s > 0)
      return pooled(s - 1);
    return shared_x_ != nullptr ? shared_x_ : scratch_[kCnnX];
  }
  MapView stage_view(std::size_t s) const {
    const ConvShape& c = s_.stages[s].conv;
    if (s > 0)
      return MapView::batch_major(c, n_);
    MapView v = MapView::dataset(c, n_);
    if (shared_x_ != nullptr)
      v.node = 0; // every node reads the same examples
    return v;
  }
  long long patches_stride(const ConvShape& c) const {
    return static_cast<long long>(c.patches(n_));
  }
  long long map_stride(const ConvShape& c) const { return static_cast<long long>(c.out_map(n_)); }

  void forward() {
    for (std::size_t k = 0; k < s_.stages.size(); ++k) {
      const CnnStageShape& st = s_.stages[k];
      const ConvShape& c = st.conv;
      const int rows = static_cast<int>(c.out_pixels()) * n_;
      float* patches = scratch_[kCnnPatches];
      ops_.im2col(stage_input(k), stage_view(k), c, n_, patches, count_);
      // z = patches W^T (W stored out x patch).
      ops_.gemm(StridedGemm{false, true, rows, c.out, c.patch(), patches, rows, patches_stride(c),
                            c_.params + c.offset, c.out, P_, z(k), rows, map_stride(c), count_});
      ops_.conv_bias(z(k), st, n_, c_.params, s_.num_params, count_);
      ops_.relu_max_pool(z(k), st, n_, pooled(k), count_);
    }
    ops_.flatten(s_.stages.back(), n_, pooled(s_.stages.size() - 1), scratch_[kCnnFlat], false,
                 count_);
    const std::size_t last = s_.dense.size() - 1;
    const float* input = scratch_[kCnnFlat];
    for (std::size_t l = 0; l <= last; ++l) {
      const BatchLayer& L = s_.dense[l];
      ops_.gemm(StridedGemm{false, false, L.out, n_, L.in, c_.params + L.offset, L.out, P_, input,
                            L.in, static_cast<long long>(L.in) * n_, dense_out(l), L.out,
                            static_cast<long long>(L.out) * n_, count_});
      ops_.add_bias(dense_out(l), L.out, n_, c_.params, s_.num_params, L.bias_offset(), l < last,
                    count_);
      input = dense_out(l);
    }
  }

  void backward() {
    const std::size_t last = s_.dense.size() - 1;
    for (std::size_t l = last + 1; l-- > 0;) {
      const BatchLayer& L = s_.dense[l];
      const float* in = l == 0 ? scratch_[kCnnFlat] : dense_out(l - 1);
      const float* dz = delta(l);
      ops_.gemm(StridedGemm{
          false, true, L.out, L.in, n_, dz, L.out, static_cast<long long>(L.out) * n_, in, L.in,
          static_cast<long long>(L.in) * n_, c_.grads + L.offset, L.out, P_, count_});
      ops_.bias_gradient(dz, L.out, n_, c_.grads, s_.num_params, L.bias_offset(), count_);
      // dx = W^T dz; below the first dense layer the pool's backward applies the ReLU.
      float* dx = l == 0 ? scratch_[kCnnDFlat] : delta(l - 1);
      ops_.gemm(StridedGemm{true, false, L.in, n_, L.out, c_.params + L.offset, L.out, P_, dz,
                            L.out, static_cast<long long>(L.out) * n_, dx, L.in,
                            static_cast<long long>(L.in) * n_, count_});
      if (l > 0)
        ops_.relu_backward(in, dx, static_cast<std::size_t>(count_) * L.in * n_);
    }
    float* da = scratch_[kCnnDPooled];
    float* dz = scratch_[kCnnDZ];
    ops_.flatten(s_.stages.back(), n_, da, scratch_[kCnnDFlat], true, count_);
    for (std::size_t k = s_.stages.size(); k-- > 0;) {
      const CnnStageShape& st = s_.stages[k];
      const ConvShape& c = st.conv;
      const int rows = static_cast<int>(c.out_pixels()) * n_;
      float* patches = scratch_[kCnnPatches];
      ops_.max_pool_backward(z(k), da, st, n_, dz, count_);
      ops_.conv_bias_gradient(dz, st, n_, c_.grads, s_.num_params, count_);
      // dW (stored out x patch) = dz^T patches(input).
      ops_.im2col(stage_input(k), stage_view(k), c, n_, patches, count_);
      ops_.gemm(StridedGemm{true, false, c.out, c.patch(), rows, dz, rows, map_stride(c), patches,
                            rows, patches_stride(c), c_.grads + c.offset, c.out, P_, count_});
      if (k > 0) { // the first stage's input is the data: no gradient needed
        // dpatches = dz W, then col2im into the previous stage's pooled map's gradient.
        ops_.gemm(StridedGemm{false, false, rows, c.patch(), c.out, dz, rows, map_stride(c),
                              c_.params + c.offset, c.out, P_, patches, rows, patches_stride(c),
                              count_});
        ops_.col2im(patches, c, n_, da, count_);
      }
    }
  }

  Ops& ops_;
  const CnnBatchShape& s_;
  float* const* scratch_;
  const BatchCommon& c_;
  int count_, n_;
  long long P_;
  const float* shared_x_;
};

// Gradients of the mean loss of `count` nodes' minibatches of n examples into c.grads, the
// losses into c.loss; scratch holds cnn_buffer_floats' buffers.
template <class Ops>
void run_cnn_batch(Ops& ops, const CnnBatchShape& shape, float* const* scratch,
                   const BatchCommon& c, int count, int n) {
  CnnBatchPass<Ops>(ops, shape, scratch, c, count, n).run();
}

// Every node's model on the same n evaluation examples (buf.x, the dataset's layout; buf's
// labels, params and outputs as run_mlp_eval's): scratch holds cnn_eval_buffer_floats'
// buffers for `count` nodes.
template <class Ops>
void run_cnn_eval(Ops& ops, const CnnBatchShape& shape, float* const* scratch,
                  const MlpEvalBuffers& buf, int count, int n) {
  BatchCommon c;
  c.params = buf.params;
  CnnBatchPass<Ops>(ops, shape, scratch, c, count, n, buf.x).evaluate(buf);
}

} // namespace dtsim::cuda
