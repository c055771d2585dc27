// SPDX-License-Identifier: MIT
// The CUDA backend of a build with DTSIM_CUDA: an Mlp's layers handed to DeviceMlp.
#include "cuda/cuda_backend.hpp"

#include "cuda/device_mlp.hpp"

#include <stdexcept>

namespace dtsim::cuda {
namespace {

class CudaMlpGradients final : public BatchedGradients {
public:
  CudaMlpGradients(const Mlp& model, const Dataset& train, int batch_size)
      : model_description_(model.describe()),
        device_(widths(model),
                {train.features.data(), static_cast<std::size_t>(train.features.size())},
                train.labels, batch_size) {}

  std::string describe() const override {
    return "cuda on " + device_.device_name() + " (" + model_description_ +
           "; cuBLAS strided-batched FP32)";
  }
  void compute(std::span<GradientJob> jobs) override { device_.compute(jobs); }
  TransferStats transfers() const override { return device_.transfers(); }

private:
  static std::vector<int> widths(const Mlp& model) {
    std::vector<int> w{model.layers().front().in};
    for (const DenseLayer& layer : model.layers())
      w.push_back(layer.out);
    return w;
  }

  std::string model_description_;
  DeviceMlp device_;
};

} // namespace

bool built_with_cuda() {
  return true;
}

std::string unavailable_reason() {
  return device_unavailable_reason();
}

std::unique_ptr<BatchedGradients> make_mlp_gradients(const Mlp& model, const Dataset& train,
                                                     int batch_size) {
  return std::make_unique<CudaMlpGradients>(model, train, batch_size);
}

} // namespace dtsim::cuda
