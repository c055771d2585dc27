// SPDX-License-Identifier: MIT
// Step timing: per-step wall clock, median and best over many steps.
#include "bench/model_step_bench.hpp"

#include "sim/core/errors.hpp"
#include "sim/core/flat_vector.hpp"
#include "sim/core/rng.hpp"

#include <algorithm>
#include <cstdint>
#include <ctime>
#include <vector>

namespace dtsim {
namespace {

double thread_seconds() {
  timespec ts{};
  clock_gettime(CLOCK_THREAD_CPUTIME_ID, &ts);
  return static_cast<double>(ts.tv_sec) + 1e-9 * static_cast<double>(ts.tv_nsec);
}

} // namespace

StepBenchResult bench_model_step(const Model& model, int num_features, int batch,
                                 double min_seconds, bool sgd_update) {
  DTSIM_ASSERT(num_features >= 1 && batch >= 1, "bench_model_step: bad sizes");
  Rng rng = Rng::stream(1, "bench", Rng::kNoNode);
  std::vector<float> features(static_cast<std::size_t>(num_features) * batch);
  for (float& x : features)
    x = static_cast<float>(rng.uniform(-1.0, 1.0));
  std::vector<std::int32_t> labels(static_cast<std::size_t>(batch));
  for (std::int32_t& y : labels)
    y = static_cast<std::int32_t>(rng.below(2));
  const BatchView view{features.data(), num_features, batch, labels.data()};

  std::vector<float> params(model.num_params()), grad(model.num_params());
  model.init(params, rng);
  auto ws = model.make_workspace(batch);
  // Small enough that the parameters barely move over thousands of steps.
  constexpr float kLr = 1e-4f;
  auto step = [&] {
    model.loss_and_grad(params, view, grad, *ws);
    if (sgd_update)
      as_vec(std::span<float>(params)) -= kLr * as_vec(std::span<const float>(grad));
  };

  for (int i = 0; i < 5; ++i)
    step();
  std::vector<double> times;
  double total = 0.0;
  while (total < min_seconds || times.size() < 20) {
    const double start = thread_seconds();
    step();
    const double s = thread_seconds() - start;
    times.push_back(s);
    total += s;
  }
  std::sort(times.begin(), times.end());
  const double flops = model.flops_per_example() * batch;
  StepBenchResult r;
  r.batch = batch;
  r.seconds_per_step = times[times.size() / 2];
  r.gflops = flops / r.seconds_per_step / 1e9;
  r.steps_per_second = 1.0 / r.seconds_per_step;
  r.seconds_per_step_best = times.front();
  r.gflops_best = flops / r.seconds_per_step_best / 1e9;
  return r;
}

} // namespace dtsim
