// SPDX-License-Identifier: MIT
// A backend that computes many nodes' minibatch gradients in one call (model.backend).
#pragma once

#include "models/model.hpp"
#include "sim/engine/resident_vectors.hpp"

#include <cstdint>
#include <span>
#include <string>

namespace dtsim {

// One node's gradient: its model, the training-set rows of its minibatch, and where the
// gradient of the mean cross-entropy over those rows goes.
struct GradientJob {
  std::span<const float> params;
  std::span<const std::uint32_t> indices;
  std::span<float> grad; // out
  double loss = 0.0;     // out: the mean minibatch loss
  int node = -1;         // whose gradient (a resident backend finds the model by it)
};

// What a backend moved between host and device memory (zero on the CPU), and where its
// wall time went: the device's copies and kernels as timed by the device, the host's copies
// between the jobs' buffers and the staging memory the device copies from.
struct TransferStats {
  std::int64_t host_to_device_bytes = 0;
  std::int64_t device_to_host_bytes = 0;
  double upload_seconds = 0.0;
  double compute_seconds = 0.0;
  double download_seconds = 0.0;
  double staging_seconds = 0.0;
  // A resident device batch's other phases, timed by the device's events: the mixing before
  // the pass, the local steps after it, and the device's idle time between them where it
  // waited for the host (cuda/phase_timer.hpp says which stretches).
  double mixing_seconds = 0.0;
  double steps_seconds = 0.0;
  double idle_seconds = 0.0;
  // A resident device's element-wise steps made on the engine thread (apply, decode,
  // own_view) and the kernels that ran them: fewer kernels than steps where they ran as
  // vector programs, as many where each ran on its own (DTSIM_CUDA_VECTOR_PROGRAMS=0).
  std::int64_t element_wise_steps = 0;
  std::int64_t element_wise_kernels = 0;
};

// Computes a batch of jobs at once: the engine hands it every gradient started since the
// last batch (a synchronous round's n nodes arrive as one batch), so that a device can run
// them as a few batched kernels rather than one launch per node. Results never depend on
// the thread count. On the CPU a job's result depends only on its own inputs; on a device
// it may also depend on how many jobs share its batch (a library may pick another kernel for
// another batch count), which the scenario and seed fix, so a run's results are still the
// same every time on the same device and build.
class BatchedGradients {
public:
  virtual ~BatchedGradients() = default;
  virtual std::string describe() const = 0;
  // The jobs' params, indices and grad spans do not overlap one another's outputs. Jobs with
  // host spans have their gradients and losses when it returns; resident jobs may have their
  // losses only after collect().
  virtual void compute(std::span<GradientJob> jobs) = 0;
  virtual TransferStats transfers() const { return {}; }
  // A backend that keeps the node vectors itself (nullptr: the jobs' spans hold the data).
  // Its jobs then have empty params and grad spans, and their gradients stay with it.
  virtual ResidentVectors* resident() { return nullptr; }
  // After the batch's after_gradient hooks: a resident backend runs the steps they queued.
  virtual void finish(std::span<GradientJob> /*jobs*/) {}
  // After finish(): the jobs' losses, where compute() left them in flight (a device returns
  // from a resident batch once its pass is queued, so that the after_gradient hooks, which
  // only queue steps there, and finish() run on the host while the device computes).
  virtual void collect(std::span<GradientJob> /*jobs*/) {}
  // Per-node accuracies where the resident models are: out[i] = node i's summed loss, correct
  // answers and count on the examples (features: num_features x labels.size(), column-major),
  // true when done; false where this backend cannot (the engine then pulls the models and
  // evaluates them on the host).
  virtual bool evaluate_resident_models(std::span<const float> /*features*/,
                                        std::span<const std::int32_t> /*labels*/,
                                        std::span<EvalResult> /*out*/) {
    return false;
  }
  // Host models' summed loss, correct answers and count on the examples (out[i] for
  // models[i]: the averaged model; the node models where the backend does not keep them),
  // computed by the backend, true when done; false where it does not (the engine then
  // evaluates them on the host). On a device this spares the host's CPU model the test
  // examples: ResNet-20's averaged model on the 10,000 test images took about 1.3 s on an
  // H100 machine's 16-core host (docs/cuda-measurements.md, fifth lease).
  virtual bool evaluate_models(std::span<const std::span<const float>> /*models*/,
                               std::span<const float> /*features*/,
                               std::span<const std::int32_t> /*labels*/,
                               std::span<EvalResult> /*out*/) {
    return false;
  }
};

} // namespace dtsim
