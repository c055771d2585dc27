// SPDX-License-Identifier: MIT
// The batched backend on the CPU (model.backend: cpu-batched): the reference for a device.
#pragma once

#include "data/dataset.hpp"
#include "models/model.hpp"
#include "sim/engine/batched_gradients.hpp"
#include "sim/engine/task_scratch.hpp"

namespace dtsim {

// Each job runs the model's own loss_and_grad on a per-thread gathered minibatch, in
// parallel over jobs: every gradient is bit-identical to the one a per-node task computes,
// so a run batched this way writes the same trace as `backend: cpu`, and tests of the
// batching and scheduling (which a GPU backend shares) need no GPU.
class CpuBatchedGradients final : public BatchedGradients {
public:
  CpuBatchedGradients(const Model& model, const Dataset& train, int batch_size);
  std::string describe() const override;
  void compute(std::span<GradientJob> jobs) override;

private:
  const Model& model_;
  const Dataset& train_;
  TaskScratchPool scratch_;
};

} // namespace dtsim
