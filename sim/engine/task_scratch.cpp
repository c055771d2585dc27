// SPDX-License-Identifier: MIT
// Per-thread scratch memory of gradient tasks.
#include "sim/engine/task_scratch.hpp"

#include "sim/core/errors.hpp"

namespace dtsim {

BatchView TaskScratch::gather(const Dataset& train, std::span<const std::uint32_t> indices) {
  const auto count = static_cast<Eigen::Index>(indices.size());
  DTSIM_ASSERT(count >= 1 && count <= batch.cols(),
               "a minibatch is empty or larger than the batch size");
  for (Eigen::Index k = 0; k < count; ++k) {
    const auto idx = static_cast<Eigen::Index>(indices[static_cast<std::size_t>(k)]);
    batch.col(k) = train.features.col(idx);
    labels[static_cast<std::size_t>(k)] = train.labels[static_cast<std::size_t>(idx)];
  }
  return {batch.data(), static_cast<int>(batch.rows()), static_cast<int>(count), labels.data()};
}

TaskScratchPool::TaskScratchPool(const Model& model, int num_features, int batch_size,
                                 bool with_gradient, bool with_model)
    : sets_([&model, num_features, batch_size, with_gradient, with_model] {
        TaskScratch s;
        s.batch.resize(num_features, batch_size);
        s.labels.resize(static_cast<std::size_t>(batch_size));
        s.workspace = model.make_workspace(batch_size);
        if (with_gradient)
          s.grad.resize(static_cast<Eigen::Index>(model.num_params()));
        if (with_model)
          s.model.resize(static_cast<Eigen::Index>(model.num_params()));
        return s;
      }) {}

} // namespace dtsim
