// SPDX-License-Identifier: MIT
// model.backend: cpu, cpu-batched, cpu-resident, cuda, cuda-batched or cuda-resident, and what
// each can run.
#include "sim/scenario/gradient_backend.hpp"

#include "cuda/cuda_backend.hpp"
#include "sim/core/errors.hpp"
#include "sim/engine/cpu_batched_gradients.hpp"
#include "sim/optimizers/cpu_resident_gradients.hpp"

#include <stdexcept>

namespace dtsim {

std::unique_ptr<BatchedGradients> make_gradient_backend(const Params& model_section,
                                                        const Model& model, const Dataset& train,
                                                        int batch_size, int nodes,
                                                        const ExampleOrder& order, BackendUse use,
                                                        std::size_t resident_vectors) {
  const std::string backend = model_section.choice(
      "backend", "cpu",
      {"cpu", "cpu-batched", "cpu-resident", "cuda", "cuda-batched", "cuda-resident"});
  const bool device = backend.starts_with("cuda");
  if (backend == "cpu")
    return nullptr;
  if (order.needs_per_example_grads())
    model_section.fail("backend", "backend " + backend +
                                      " computes no per-example gradients, which the example "
                                      "order " +
                                      order.describe() + " needs: use backend: cpu");
  if (device && !cuda::runs_model(model))
    model_section.fail(
        "backend", "backend " + backend +
                       " runs the built-in models (softmax, mlp, lenet, cnn with kernels up to 7, "
                       "resnet20); " +
                       model.describe() + " runs on backend: cpu");
  if (use == BackendUse::check)
    return nullptr;
  if (device)
    if (const std::string why = cuda::unavailable_reason(); !why.empty())
      model_section.fail("backend", why);
  if (use == BackendUse::check_device)
    return nullptr;
  if (backend == "cpu-batched")
    return std::make_unique<CpuBatchedGradients>(model, train, batch_size);
  if (backend == "cpu-resident")
    return std::make_unique<CpuResidentGradients>(model, train, batch_size, nodes);
  try {
    // Device memory for resident vectors only when the algorithm will keep them there:
    // cuda-resident refuses a run they do not fit, cuda then keeps them on the host.
    const bool resident = backend != "cuda-batched" && resident_vectors > 0;
    return cuda::make_gradients(
        model, train, batch_size,
        resident ? cuda::ResidentSize(nodes, resident_vectors, backend == "cuda-resident")
                 : cuda::ResidentSize());
  } catch (const std::runtime_error& e) {
    model_section.fail("backend", e.what());
  }
}

} // namespace dtsim
