// SPDX-License-Identifier: MIT
// The MLP/softmax network's batched pass on the device (mlp_batch_math.hpp over
// DeviceMlpOps), and whether a usable device is present.
#include "cuda/device_batch_runner.cuh"
#include "cuda/device_mlp_ops.cuh"

#include <memory>
#include <string>

namespace dtsim::cuda {
namespace {

// Scratch per node: the gathered minibatch, two deltas of the widest layer, each layer's
// activations.
struct MlpNetwork {
  MlpBatchShape shape;
  // The forward products' bias (and ReLU) in their epilogue; null: in a kernel of its own.
  std::shared_ptr<BiasEpilogueGemms> epilogues;

  std::size_t num_params() const { return shape.num_params; }
  std::vector<std::size_t> scratch_floats(int n) const {
    const auto n_ = static_cast<std::size_t>(n);
    std::vector<std::size_t> floats{static_cast<std::size_t>(shape.features) * n_,
                                    static_cast<std::size_t>(shape.widest) * n_,
                                    static_cast<std::size_t>(shape.widest) * n_};
    for (const BatchLayer& l : shape.layers)
      floats.push_back(static_cast<std::size_t>(l.out) * n_);
    return floats;
  }
  void run(cublasHandle_t blas, cudaStream_t stream, const BatchCommon& c, float* const* scratch,
           int count, int n, int deferred_layers = 0, bool first_forward_done = false) const {
    DeviceMlpOps ops{blas, stream, epilogues.get()};
    run_mlp_batch(ops, shape, buffers(c, scratch), count, n, deferred_layers, first_forward_done);
  }
  // What the batch runner's description adds: where the bias is not in the epilogue.
  std::string kernel_note() const {
    return epilogues ? "" : "the forward products' bias in a kernel of its own";
  }
  // The layers whose weight gradient a pass can leave for the local steps (run_mlp_batch).
  int deferrable_layers() const { return cuda::deferrable_layers(shape); }
  // A pass run with `layers` deferred: their weight gradients after all (DeviceBatchRunner,
  // where the local steps cannot take them fused; the minibatch gathered first where the
  // pass did not), or where the fused steps find what they need (the same buffers, until
  // their next pass; the minibatch by index where it was not gathered).
  void deferred_weight_gradients(cublasHandle_t blas, cudaStream_t stream, const BatchCommon& c,
                                 float* const* scratch, int count, int n, bool gathered,
                                 int layers) const {
    DeviceMlpOps ops{blas, stream, nullptr};
    const MlpBatchBuffers buf = buffers(c, scratch);
    if (!gathered && layers > 0)
      ops.gather(buf, shape.features, n, count);
    for (int l = 0; l < layers; ++l)
      ops.gemm(weight_gradient_gemm(shape, buf, static_cast<std::size_t>(l), count, n));
  }
  FusedLayers fused_layers(const BatchCommon& c, float* const* scratch, int n, int first_node,
                           bool gathered, int layers) const {
    return fused_layer_plans(shape, buffers(c, scratch), n, first_node, gathered, layers);
  }
  // The first layer's W (at the start of a row), and its mixed forward product's plan: the
  // pre-activations into the first layer's activations (scratch[3]), where run() with
  // first_forward_done adds the bias.
  std::size_t first_layer_weights() const {
    const BatchLayer& L = shape.layers.front();
    return static_cast<std::size_t>(L.out) * static_cast<std::size_t>(L.in);
  }
  int first_layer_outputs() const { return shape.layers.front().out; }
  MixedForwardPlan mixed_forward(const float* train, const std::uint32_t* idx,
                                 float* const* scratch, int n, int first_node) const {
    const BatchLayer& L = shape.layers.front();
    return {train, idx, scratch[3], L.out, L.in, n, first_node};
  }
  static MlpBatchBuffers buffers(const BatchCommon& c, float* const* scratch) {
    MlpBatchBuffers buf;
    static_cast<BatchCommon&>(buf) = c;
    buf.x = scratch[0];
    buf.delta[0] = scratch[1];
    buf.delta[1] = scratch[2];
    buf.act = scratch + 3;
    return buf;
  }
  // The evaluation pass (DeviceBatchRunner::evaluate_resident): the examples' width, and each
  // layer's activations per node for n examples.
  int input_features() const { return shape.features; }
  std::vector<std::size_t> eval_scratch_floats(int n) const {
    std::vector<std::size_t> floats;
    for (const BatchLayer& l : shape.layers)
      floats.push_back(static_cast<std::size_t>(l.out) * static_cast<std::size_t>(n));
    return floats;
  }
  void evaluate(cublasHandle_t blas, cudaStream_t stream, const MlpEvalBuffers& buf, int count,
                int n) const {
    DeviceMlpOps ops{blas, stream, epilogues.get()};
    run_mlp_eval(ops, shape, buf, count, n);
  }
};

} // namespace

std::unique_ptr<DeviceGradients> make_device_mlp(std::vector<int> widths,
                                                 std::span<const float> train_features,
                                                 std::span<const std::int32_t> train_labels,
                                                 int batch_size, int max_nodes_per_batch,
                                                 ResidentSize resident, KernelChoices choices) {
  if (widths.size() < 2 ||
      train_features.size() != static_cast<std::size_t>(widths.front()) * train_labels.size())
    throw std::invalid_argument("device MLP: widths do not match the training set");
  if (const std::string why = device_unavailable_reason(); !why.empty())
    throw std::runtime_error(why);
  std::shared_ptr<BiasEpilogueGemms> epilogues;
  if (choices.bias_epilogue)
    epilogues = std::make_shared<BiasEpilogueGemms>();
  return std::make_unique<DeviceBatchRunner<MlpNetwork>>(
      MlpNetwork{mlp_batch_shape(widths), std::move(epilogues)}, train_features, train_labels,
      batch_size, max_nodes_per_batch, resident, choices);
}

std::string device_unavailable_reason() {
  int count = 0;
  const cudaError_t e = cudaGetDeviceCount(&count);
  if (e != cudaSuccess) {
    cudaGetLastError(); // clear the sticky-free error so later calls start clean
    return std::string("no CUDA device found (") + cudaGetErrorString(e) + ")";
  }
  if (count == 0)
    return "no CUDA device found";
  // The kernels are built for sm_80 and sm_90 (CMAKE_CUDA_ARCHITECTURES): refuse an older
  // GPU here, before a run, rather than at its first kernel launch.
  int device = 0, major = 0;
  if (cudaGetDevice(&device) != cudaSuccess ||
      cudaDeviceGetAttribute(&major, cudaDevAttrComputeCapabilityMajor, device) != cudaSuccess)
    return "no usable CUDA device found (its compute capability could not be read)";
  if (major < 8)
    return "no usable CUDA device found (compute capability " + std::to_string(major) +
           ".x; dtsim's kernels need 8.0 or newer)";
  return {};
}

} // namespace dtsim::cuda
