// SPDX-License-Identifier: MIT
// Batched gradients on the CPU: the model's per-node path, in parallel over jobs.
#include "sim/engine/cpu_batched_gradients.hpp"

#include "sim/core/errors.hpp"

#include <tbb/parallel_for.h>

namespace dtsim {

CpuBatchedGradients::CpuBatchedGradients(const Model& model, const Dataset& train, int batch_size)
    : model_(model), train_(train),
      scratch_(model, static_cast<int>(train.num_features()), batch_size, false, false) {}

std::string CpuBatchedGradients::describe() const {
  return "cpu-batched (" + model_.describe() + ")";
}

void CpuBatchedGradients::compute(std::span<GradientJob> jobs) {
  // One job per chunk: the body does not wait on oneTBB work, so no thread can start
  // another body while it holds its scratch (task_scratch.hpp).
  tbb::parallel_for(tbb::blocked_range<std::size_t>(0, jobs.size(), 1),
                    [&](const tbb::blocked_range<std::size_t>& range) {
                      TaskScratch& s = scratch_.local();
                      for (std::size_t j = range.begin(); j != range.end(); ++j) {
                        GradientJob& job = jobs[j];
                        const BatchView view = s.gather(train_, job.indices);
                        job.loss = model_.loss_and_grad(job.params, view, job.grad, *s.workspace);
                      }
                    });
}

} // namespace dtsim
