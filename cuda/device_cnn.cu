// SPDX-License-Identifier: MIT
// The LeNet/CNN network's batched pass on the device (cnn_batch_math.hpp over DeviceCnnOps):
// im2col + strided-batched GEMMs for the convolutions, element kernels for bias, ReLU + max
// pooling and the flatten, the MLP executor's steps for the dense stack and loss.
#include "cuda/cnn_batch_math.hpp"
#include "cuda/device_batch_runner.cuh"
#include "cuda/device_conv_ops.cuh"

namespace dtsim::cuda {
namespace {

struct DeviceCnnOps : DeviceConvOps {
  void conv_bias(float* z, const CnnStageShape& s, int n, const float* params,
                 std::size_t num_params, int count) const {
    each_element(stream, count, s.conv.out_map(n), [=] __device__(int b, std::size_t i) {
      conv_bias_element(z, s, n, params, num_params, b, i);
    });
  }
  void relu_max_pool(const float* z, const CnnStageShape& s, int n, float* a, int count) const {
    each_element(stream, count, s.pooled_map(n),
                 [=] __device__(int b, std::size_t i) { relu_max_pool_element(z, s, n, a, b, i); });
  }
  void max_pool_backward(const float* z, const float* da, const CnnStageShape& s, int n, float* dz,
                         int count) const {
    each_element(stream, count, s.conv.out_map(n), [=] __device__(int b, std::size_t i) {
      max_pool_backward_element(z, da, s, n, dz, b, i);
    });
  }
  void conv_bias_gradient(const float* dz, const CnnStageShape& s, int n, float* grads,
                          std::size_t num_params, int count) const {
    each_element(stream, count, static_cast<std::size_t>(s.conv.out),
                 [=] __device__(int b, std::size_t c) {
                   conv_bias_gradient_element(dz, s, n, grads, num_params, b, static_cast<int>(c));
                 });
  }
  void flatten(const CnnStageShape& s, int n, float* map, float* flat, bool to_map,
               int count) const {
    each_element(stream, count, s.pooled_map(n), [=] __device__(int b, std::size_t i) {
      flatten_element(s, n, map, flat, to_map, b, i);
    });
  }
};

struct CnnNetwork {
  CnnBatchShape shape;

  std::size_t num_params() const { return shape.num_params; }
  std::vector<std::size_t> scratch_floats(int n) const { return cnn_buffer_floats(shape, n); }
  void run(cublasHandle_t blas, cudaStream_t stream, const BatchCommon& c, float* const* scratch,
           int count, int n) const {
    DeviceCnnOps ops{{{blas, stream, nullptr}}};
    run_cnn_batch(ops, shape, scratch, c, count, n);
  }
  // The evaluation pass (DeviceBatchRunner::evaluate_resident): the examples' width, the
  // forward pass's buffers per node for n examples, at most kEvalExamples examples a pass
  // (LeNet's take 112 MB per node for 1,000: a larger eval.per_node_samples is sliced, not
  // allocated whole), the pass over buf.act as those buffers.
  static constexpr int kEvalExamples = 1000;
  int input_features() const { return shape.features(); }
  int max_eval_examples() const { return kEvalExamples; }
  std::vector<std::size_t> eval_scratch_floats(int n) const {
    return cnn_eval_buffer_floats(shape, n);
  }
  void evaluate(cublasHandle_t blas, cudaStream_t stream, const MlpEvalBuffers& buf, int count,
                int n) const {
    DeviceCnnOps ops{{{blas, stream, nullptr}}};
    run_cnn_eval(ops, shape, buf.act, buf, count, n);
  }
};

} // namespace

std::unique_ptr<DeviceGradients> make_device_cnn(CnnBatchShape shape,
                                                 std::span<const float> train_features,
                                                 std::span<const std::int32_t> train_labels,
                                                 int batch_size, int max_nodes_per_batch,
                                                 ResidentSize resident, KernelChoices choices) {
  if (train_features.size() != static_cast<std::size_t>(shape.features()) * train_labels.size())
    throw std::invalid_argument("device CNN: the input shape does not match the training set");
  for (const CnnStageShape& stage : shape.stages)
    if (const std::string why = conv_shape_problem(stage.conv, batch_size); !why.empty())
      throw std::invalid_argument("device CNN: " + why);
  if (const std::string why = device_unavailable_reason(); !why.empty())
    throw std::runtime_error(why);
  return std::make_unique<DeviceBatchRunner<CnnNetwork>>(CnnNetwork{std::move(shape)},
                                                         train_features, train_labels, batch_size,
                                                         max_nodes_per_batch, resident, choices);
}

} // namespace dtsim::cuda
