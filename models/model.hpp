// SPDX-License-Identifier: MIT
// The model interface: a network over one flat, contiguous float parameter vector.
#pragma once

#include <cstdint>
#include <memory>
#include <span>
#include <string>

namespace dtsim {

class Rng;

// A minibatch: `count` examples stored as contiguous columns of `num_features` floats
// (column-major num_features x count), and their labels.
struct BatchView {
  const float* features = nullptr;
  int num_features = 0;
  int count = 0;
  const std::int32_t* labels = nullptr;
};

// Scratch memory for one caller (one gradient task or one evaluation chunk): sized once for
// a maximum batch so that no step allocates.
class Workspace {
public:
  virtual ~Workspace() = default;
};

struct EvalResult {
  double loss_sum = 0.0;    // summed cross-entropy over the batch
  std::int64_t correct = 0; // argmax == label
  std::int64_t count = 0;
};

// A model is const and re-entrant: all mutable memory is in the parameters, the gradient and
// the workspace passed in, so one Model serves every node on every thread.
class Model {
public:
  virtual ~Model() = default;
  virtual std::string describe() const = 0; // e.g. "mlp 784-256-128-10 (235146 params)"
  virtual std::size_t num_params() const = 0;
  // Initialises params (size num_params()) from rng (He/Glorot-style scaled uniform).
  virtual void init(std::span<float> params, Rng& rng) const = 0;
  virtual std::unique_ptr<Workspace> make_workspace(int max_batch) const = 0;
  // requires batch.count <= the workspace's max_batch. Writes the gradient of the mean
  // cross-entropy over the batch into `grad` (overwritten) and returns that mean loss.
  virtual double loss_and_grad(std::span<const float> params, const BatchView& batch,
                               std::span<float> grad, Workspace& ws) const = 0;
  virtual EvalResult evaluate(std::span<const float> params, const BatchView& batch,
                              Workspace& ws) const = 0;
  // Floating-point operations of one forward + backward pass per example (for benchmarks).
  virtual double flops_per_example() const = 0;
  // The most examples one evaluate() call should take (a workspace is made for that many per
  // thread): large for models whose workspace is small per example, smaller where it is not.
  virtual int max_eval_batch() const { return 500; }

  // Example-ordering support (GraB family): one batched forward/backward pass that also
  // writes each example's own gradient of its cross-entropy loss as column k of
  // `per_example` (num_params() x batch.count, column-major), without per-example forward
  // passes. `grad` receives the batch-mean gradient exactly as loss_and_grad would (the mean
  // of the columns). Returns the mean loss. Models that cannot do this keep the default,
  // which reports that they do not support it (callers check supports_per_example_grads()).
  virtual bool supports_per_example_grads() const { return false; }
  virtual double loss_and_per_example_grads(std::span<const float> params, const BatchView& batch,
                                            std::span<float> grad, std::span<float> per_example,
                                            Workspace& ws) const;
};

} // namespace dtsim
