// SPDX-License-Identifier: MIT
// Chunked parallel evaluation with an ordered reduction.
#include "sim/engine/evaluator.hpp"

#include <algorithm>
#include <tbb/parallel_for.h>

namespace dtsim {

Evaluator::Evaluator(const Model& model, const Dataset& data, std::size_t count)
    : Evaluator(model, {data.features.data(), static_cast<std::size_t>(data.features.size())},
                data.num_features(), data.labels, count) {}

Evaluator::Evaluator(const Model& model, std::span<const float> features, int num_features,
                     std::span<const std::int32_t> labels, std::size_t count)
    : model_(model), chunk_(static_cast<std::size_t>(std::max(model.max_eval_batch(), 1))),
      features_(features), num_features_(num_features), labels_(labels),
      count_(count == 0 ? labels.size() : std::min(count, labels.size())),
      workspaces_([this] { return model_.make_workspace(static_cast<int>(chunk_)); }) {}

EvalResult Evaluator::evaluate(std::span<const float> params) {
  EvalResult r;
  evaluate_many(std::span<const std::span<const float>>(&params, 1), count_, {&r, 1});
  return r;
}

void Evaluator::evaluate_many(std::span<const std::span<const float>> models, std::size_t count,
                              std::span<EvalResult> out) {
  count = std::min(count, count_);
  const std::size_t chunks = (count + chunk_ - 1) / chunk_;
  const std::size_t jobs = chunks * models.size();
  partial_.assign(jobs, EvalResult{});
  tbb::parallel_for(std::size_t{0}, jobs, [&](std::size_t job) {
    const std::size_t m = job / chunks, c = job % chunks;
    const std::size_t first = c * chunk_;
    const std::size_t n = std::min(chunk_, count - first);
    BatchView batch{features_.data() + first * static_cast<std::size_t>(num_features_),
                    num_features_, static_cast<int>(n), labels_.data() + first};
    partial_[job] = model_.evaluate(models[m], batch, *workspaces_.local());
  });
  for (std::size_t m = 0; m < models.size(); ++m) {
    EvalResult sum;
    for (std::size_t c = 0; c < chunks; ++c) {
      const EvalResult& p = partial_[m * chunks + c];
      sum.loss_sum += p.loss_sum;
      sum.correct += p.correct;
      sum.count += p.count;
    }
    out[m] = sum;
  }
}

} // namespace dtsim
