// SPDX-License-Identifier: MIT
// Per-thread scratch memory of gradient tasks.
#include "sim/engine/task_scratch.hpp"

namespace dtsim {

TaskScratchPool::TaskScratchPool(const Model& model, int num_features, int batch_size,
                                 bool with_gradient)
    : sets_([&model, num_features, batch_size, with_gradient] {
        TaskScratch s;
        s.batch.resize(num_features, batch_size);
        s.labels.resize(static_cast<std::size_t>(batch_size));
        s.workspace = model.make_workspace(batch_size);
        if (with_gradient)
          s.grad.resize(static_cast<Eigen::Index>(model.num_params()));
        return s;
      }) {}

} // namespace dtsim
