// SPDX-License-Identifier: MIT
// The CUDA backend of a build with DTSIM_CUDA: a model's layers handed to its device pass.
#include "cuda/cuda_backend.hpp"

#include "cuda/cnn_batch_shape.hpp"
#include "cuda/device_gradients.hpp"
#include "cuda/resnet_batch_shape.hpp"

#include <cstdlib>
#include <stdexcept>
#include <string_view>

namespace dtsim::cuda {
namespace {

// The first layer's mixing fused into its forward product (MlpFusion::mixing) is
// off until a GPU has measured it; DTSIM_CUDA_MIXED_FORWARD=1 turns it on for such a
// measurement (the trace's gradient_backend then says so).
bool mixed_forward_requested() {
  const char* v = std::getenv("DTSIM_CUDA_MIXED_FORWARD");
  return v != nullptr && std::string_view(v) == "1";
}

// The first two layers' weight gradients fused into the local steps (MlpFusion::step_layers);
// DTSIM_CUDA_FUSED_LAYERS=1 keeps the first alone, as before 2026-11-27, for a measurement
// of the second's fusion against it on one binary (the trace's gradient_backend says so).
int fused_step_layers() {
  const char* v = std::getenv("DTSIM_CUDA_FUSED_LAYERS");
  return v != nullptr && std::string_view(v) == "1" ? 1 : MlpFusion{}.step_layers;
}

// The fused steps' tiles copied into shared memory during the sums (MlpFusion::prefetch);
// DTSIM_CUDA_FUSED_PREFETCH=0 loads them after the sums (the earlier kernel, fused_step),
// for a measurement of the copy on one binary (the trace's gradient_backend says so).
bool fused_prefetch() {
  const char* v = std::getenv("DTSIM_CUDA_FUSED_PREFETCH");
  return !(v != nullptr && std::string_view(v) == "0");
}

class CudaGradients final : public BatchedGradients {
public:
  CudaGradients(std::string model_description, std::unique_ptr<DeviceGradients> device)
      : model_description_(std::move(model_description)), device_(std::move(device)) {}

  std::string describe() const override {
    const std::string notes = device_->kernel_notes();
    return std::string(device_->resident() ? "cuda-resident" : "cuda") + " on " +
           device_->device_name() + " (" + model_description_ + "; cuBLAS strided-batched FP32" +
           (notes.empty() ? "" : "; " + notes) + ")";
  }
  void compute(std::span<GradientJob> jobs) override { device_->compute(jobs); }
  TransferStats transfers() const override { return device_->transfers(); }
  ResidentVectors* resident() override { return device_->resident(); }
  void finish(std::span<GradientJob> jobs) override { device_->finish(jobs); }
  void collect(std::span<GradientJob> jobs) override { device_->collect(jobs); }
  bool evaluate_resident_models(std::span<const float> features,
                                std::span<const std::int32_t> labels,
                                std::span<EvalResult> out) override {
    return device_->evaluate_resident(features, labels, out);
  }
  bool evaluate_models(std::span<const std::span<const float>> models,
                       std::span<const float> features, std::span<const std::int32_t> labels,
                       std::span<EvalResult> out) override {
    return device_->evaluate_models(models, features, labels, out);
  }

private:
  std::string model_description_;
  std::unique_ptr<DeviceGradients> device_;
};

} // namespace

bool built_with_cuda() {
  return true;
}

std::string unavailable_reason() {
  return device_unavailable_reason();
}

std::unique_ptr<BatchedGradients> make_gradients(const Model& model, const Dataset& train,
                                                 int batch_size, ResidentSize resident) {
  const std::span<const float> features{train.features.data(),
                                        static_cast<std::size_t>(train.features.size())};
  std::unique_ptr<DeviceGradients> device;
  if (const auto* mlp = dynamic_cast<const Mlp*>(&model))
    device = make_device_mlp(mlp_widths(*mlp), features, train.labels, batch_size, 65535, resident,
                             {.steps = true,
                              .step_layers = fused_step_layers(),
                              .prefetch = fused_prefetch(),
                              .mixing = mixed_forward_requested()});
  else if (const auto* cnn = dynamic_cast<const Cnn*>(&model))
    device =
        make_device_cnn(cnn_batch_shape(*cnn), features, train.labels, batch_size, 65535, resident);
  else if (const auto* resnet = dynamic_cast<const ResNet*>(&model))
    device = make_device_resnet(resnet_batch_shape(*resnet), features, train.labels, batch_size,
                                65535, resident);
  else
    throw std::invalid_argument("backend cuda does not run " + model.describe());
  return std::make_unique<CudaGradients>(model.describe(), std::move(device));
}

} // namespace dtsim::cuda
