// SPDX-License-Identifier: MIT
// The ResNet network's batched pass on the device (resnet_batch_math.hpp over
// DeviceResNetOps): im2col + strided-batched GEMMs for the convolutions, element kernels for
// GroupNorm, the shortcuts and the pooling, the MLP executor's steps for the head and loss.
#include "cuda/device_batch_runner.cuh"
#include "cuda/device_conv_ops.cuh"
#include "cuda/resnet_batch_math.hpp"

namespace dtsim::cuda {
namespace {

struct DeviceResNetOps : DeviceConvOps {
  void norm_stats(const float* z, const NormShape& g, int n, float* partial, float* stats,
                  int count) const {
    for (const bool squares : {false, true}) {
      each_element(stream, count, static_cast<std::size_t>(n) * g.channels,
                   [=] __device__(int b, std::size_t t) {
                     norm_channel_sum_element(z, stats, g, n, squares, partial, b,
                                              static_cast<int>(t));
                   });
      each_element(stream, count, static_cast<std::size_t>(n) * g.groups,
                   [=] __device__(int b, std::size_t t) {
                     norm_group_stat_element(partial, g, n, squares, stats, b, static_cast<int>(t));
                   });
    }
  }
  void norm_apply(const float* z, const float* stats, const float* params, std::size_t num_params,
                  const NormShape& g, int n, bool relu, float* y, int count) const {
    each_element(stream, count, static_cast<std::size_t>(g.channels) * g.pixels * n,
                 [=] __device__(int b, std::size_t i) {
                   norm_apply_element(z, stats, params, num_params, g, n, relu, y, b, i);
                 });
  }
  void norm_backward(const float* z, const float* stats, const float* dy, float* sums,
                     const float* params, float* grads, std::size_t num_params, const NormShape& g,
                     int n, float* dz, int count) const {
    each_element(stream, count, static_cast<std::size_t>(n) * g.channels,
                 [=] __device__(int b, std::size_t t) {
                   norm_sums_element(z, stats, dy, g, n, sums, b, static_cast<int>(t));
                 });
    each_element(stream, count, static_cast<std::size_t>(g.channels),
                 [=] __device__(int b, std::size_t c) {
                   norm_param_grad_element(sums, g, n, grads, num_params, b, static_cast<int>(c));
                 });
    each_element(stream, count, static_cast<std::size_t>(g.channels) * g.pixels * n,
                 [=] __device__(int b, std::size_t i) {
                   norm_input_grad_element(z, stats, dy, sums, params, num_params, g, n, dz, b, i);
                 });
  }
  void shortcut_relu(const float* in, const ConvShape& c, int n, float* out, int count) const {
    each_element(stream, count, c.out_map(n), [=] __device__(int b, std::size_t i) {
      shortcut_relu_element(in, c, n, out, b, i);
    });
  }
  void shortcut_backward(const float* d_out, const ConvShape& c, int n, float* d_in,
                         int count) const {
    each_element(stream, count, c.in_map(n), [=] __device__(int b, std::size_t i) {
      shortcut_backward_element(d_out, c, n, d_in, b, i);
    });
  }
  void average_pool(const float* map, int channels, int pixels, int n, float* pooled,
                    int count) const {
    each_element(stream, count, static_cast<std::size_t>(channels) * n,
                 [=] __device__(int b, std::size_t t) {
                   average_pool_element(map, channels, pixels, n, pooled, b, static_cast<int>(t));
                 });
  }
  void average_pool_backward(const float* dpooled, int channels, int pixels, int n, float* d_map,
                             int count) const {
    each_element(stream, count, static_cast<std::size_t>(channels) * pixels * n,
                 [=] __device__(int b, std::size_t i) {
                   average_pool_backward_element(dpooled, channels, pixels, n, d_map, b, i);
                 });
  }
};

struct ResNetNetwork {
  ResNetBatchShape shape;

  std::size_t num_params() const { return shape.num_params; }
  std::vector<std::size_t> scratch_floats(int n) const { return resnet_buffer_floats(shape, n); }
  void run(cublasHandle_t blas, cudaStream_t stream, const BatchCommon& c, float* const* scratch,
           int count, int n) const {
    ResNetBatchBuffers buf;
    bind_resnet_buffers(scratch, buf);
    static_cast<BatchCommon&>(buf) = c;
    DeviceResNetOps ops{{{blas, stream, nullptr}}};
    run_resnet_batch(ops, shape, buf, count, n);
  }
  // The evaluation pass (DeviceBatchRunner::evaluate_resident): the examples' width, the
  // forward pass's buffers per node for n examples, at most kEvalExamples examples a pass
  // (ResNet-20's maps on 1,000 Fashion-MNIST examples would take 2 GB per node), the pass
  // over buf.act as those buffers.
  static constexpr int kEvalExamples = 100;
  int input_features() const { return shape.features(); }
  int max_eval_examples() const { return kEvalExamples; }
  std::vector<std::size_t> eval_scratch_floats(int n) const {
    return resnet_eval_buffer_floats(shape, n);
  }
  void evaluate(cublasHandle_t blas, cudaStream_t stream, const MlpEvalBuffers& buf, int count,
                int n) const {
    DeviceResNetOps ops{{{blas, stream, nullptr}}};
    run_resnet_eval(ops, shape, buf.act, buf, count, n);
  }
};

} // namespace

std::unique_ptr<DeviceGradients> make_device_resnet(ResNetBatchShape shape,
                                                    std::span<const float> train_features,
                                                    std::span<const std::int32_t> train_labels,
                                                    int batch_size, int max_nodes_per_batch,
                                                    ResidentSize resident, KernelChoices choices) {
  if (train_features.size() != static_cast<std::size_t>(shape.features()) * train_labels.size())
    throw std::invalid_argument("device ResNet: the input shape does not match the training set");
  std::vector<const ConvShape*> convs{&shape.stem};
  for (const ResBlockShape& block : shape.blocks)
    convs.insert(convs.end(), {&block.conv1, &block.conv2});
  for (const ConvShape* conv : convs)
    if (const std::string why = conv_shape_problem(*conv, batch_size); !why.empty())
      throw std::invalid_argument("device ResNet: " + why);
  if (const std::string why = device_unavailable_reason(); !why.empty())
    throw std::runtime_error(why);
  return std::make_unique<DeviceBatchRunner<ResNetNetwork>>(
      ResNetNetwork{std::move(shape)}, train_features, train_labels, batch_size,
      max_nodes_per_batch, resident, choices);
}

} // namespace dtsim::cuda
