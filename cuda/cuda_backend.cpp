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

// Whether the environment sets `name` to `value`: the switches below, each for a
// measurement of a kernel choice against its alternative on one binary (the trace's
// gradient_backend names every choice off its default).
bool environment_says(const char* name, std::string_view value) {
  const char* v = std::getenv(name);
  return v != nullptr && std::string_view(v) == value;
}

// The kernel choices (KernelChoices), each at its default but where the environment says:
// DTSIM_CUDA_MIXED_FORWARD=1 the first layer's mixing in its forward product (off until a
// GPU has measured a gain); DTSIM_CUDA_FUSED_LAYERS=1 the first layer's steps alone fused,
// as before 2026-11-27; DTSIM_CUDA_FUSED_PREFETCH=0 the fused steps' model and momentum
// loaded after the sums (the earlier kernel, fused_step); DTSIM_CUDA_FUSED_SUMS_FIRST=0 the
// sums' inputs copied after the tiles; DTSIM_CUDA_PLAIN_MIX=0 the plain mixing in the kernel
// of every mixing; DTSIM_CUDA_VECTOR_PROGRAMS=0 a kernel per element-wise step of the engine
// thread's; DTSIM_CUDA_GEMM_EPILOGUE=0 the forward products' bias in a kernel of its own;
// DTSIM_CUDA_PRELOAD=0 the kernels loaded and the first pass's plans made at their first use,
// inside the run's clock, as before 2026-11-28.
KernelChoices choices_from_environment() {
  KernelChoices f;
  f.bias_epilogue = !environment_says("DTSIM_CUDA_GEMM_EPILOGUE", "0");
  f.mixing = environment_says("DTSIM_CUDA_MIXED_FORWARD", "1");
  if (environment_says("DTSIM_CUDA_FUSED_LAYERS", "1"))
    f.step_layers = 1;
  f.prefetch = !environment_says("DTSIM_CUDA_FUSED_PREFETCH", "0");
  f.sums_first = !environment_says("DTSIM_CUDA_FUSED_SUMS_FIRST", "0");
  f.plain_mixing_kernel = !environment_says("DTSIM_CUDA_PLAIN_MIX", "0");
  f.vector_programs = !environment_says("DTSIM_CUDA_VECTOR_PROGRAMS", "0");
  f.preload_kernels = !environment_says("DTSIM_CUDA_PRELOAD", "0");
  return f;
}

class CudaGradients final : public BatchedGradients {
public:
  CudaGradients(std::string model_description, std::unique_ptr<DeviceGradients> device)
      : model_description_(std::move(model_description)), device_(std::move(device)) {}

  std::string describe() const override {
    const std::string notes = device_->kernel_notes();
    return std::string(device_->resident() ? "cuda-resident" : "cuda-batched") + " on " +
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
  const KernelChoices choices = choices_from_environment();
  if (const auto* mlp = dynamic_cast<const Mlp*>(&model))
    device = make_device_mlp(mlp_widths(*mlp), features, train.labels, batch_size, 65535, resident,
                             choices);
  else if (const auto* cnn = dynamic_cast<const Cnn*>(&model))
    device = make_device_cnn(cnn_batch_shape(*cnn), features, train.labels, batch_size, 65535,
                             resident, choices);
  else if (const auto* resnet = dynamic_cast<const ResNet*>(&model))
    device = make_device_resnet(resnet_batch_shape(*resnet), features, train.labels, batch_size,
                                65535, resident, choices);
  else
    throw std::invalid_argument("backend cuda does not run " + model.describe());
  return std::make_unique<CudaGradients>(model.describe(), std::move(device));
}

} // namespace dtsim::cuda
