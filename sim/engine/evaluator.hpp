// SPDX-License-Identifier: MIT
// Test-set loss and accuracy of one or many models, in parallel, with a fixed reduction order.
#pragma once

#include "data/dataset.hpp"
#include "models/model.hpp"

#include <memory>
#include <span>
#include <tbb/enumerable_thread_specific.h>
#include <vector>

namespace dtsim {

// Evaluates models on the first `count` examples of a dataset. Work is split into fixed
// chunks that run as oneTBB tasks; per-chunk results are summed serially in chunk order, so
// the result is the same for any thread count.
class Evaluator {
public:
  Evaluator(const Model& model, const Dataset& data, std::size_t count);
  // On examples given as spans (features: num_features x labels.size(), column-major), which
  // must outlive it: a backend evaluating the models it keeps, on the engine's examples.
  Evaluator(const Model& model, std::span<const float> features, int num_features,
            std::span<const std::int32_t> labels, std::size_t count);
  EvalResult evaluate(std::span<const float> params);
  // One result per model, each on the first `count` examples (count <= this evaluator's).
  void evaluate_many(std::span<const std::span<const float>> models, std::size_t count,
                     std::span<EvalResult> out);
  std::size_t count() const { return count_; }
  // The first `count` examples (count <= this evaluator's), for a backend that evaluates
  // models itself: features (num_features x count, column-major) and labels.
  std::span<const float> features(std::size_t count) const {
    return features_.first(count * static_cast<std::size_t>(num_features_));
  }
  std::span<const std::int32_t> labels(std::size_t count) const { return labels_.first(count); }

private:
  const Model& model_;
  const std::size_t chunk_; // examples per task: Model::max_eval_batch()
  std::span<const float> features_;
  int num_features_;
  std::span<const std::int32_t> labels_;
  std::size_t count_;
  tbb::enumerable_thread_specific<std::unique_ptr<Workspace>> workspaces_;
  std::vector<EvalResult> partial_;
};

} // namespace dtsim
