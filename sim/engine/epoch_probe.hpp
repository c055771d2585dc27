// SPDX-License-Identifier: MIT
// EpochProbe: the per-epoch measurements (node-data training loss, parallel herding bound).
#pragma once

#include "data/dataset.hpp"
#include "data/partition.hpp"
#include "models/model.hpp"
#include "sim/core/flat_vector.hpp"

#include <Eigen/Core>
#include <cstdint>
#include <memory>
#include <span>
#include <tbb/enumerable_thread_specific.h>
#include <vector>

namespace dtsim {

// Runs at epoch boundaries on frozen models, in parallel on oneTBB over fixed chunks whose
// results are combined serially in chunk order, so results do not depend on thread count.
// Per-thread scratch (a gathered batch, a workspace, and for the herding bound a
// num_params x chunk per-example buffer) is allocated on first use and kept.
class EpochProbe {
public:
  EpochProbe(const Model& model, const Dataset& train, const Partition& partition, int batch_size,
             bool herding);

  // Mean over nodes of the mean cross-entropy of models[i] on node i's examples; with one
  // model, that model on every node's examples.
  double node_train_loss(std::span<const std::span<const float>> models);

  // The parallel herding bound (docs/algorithms.md, section 7) at `params`: the nodes' orders
  // interleaved step by step (batch_size examples per node per step), per-example gradients
  // centred by their mean over the sequence, max over prefixes of the prefix sum's inf-norm.
  // requires: constructed with herding = true.
  double herding_bound(std::span<const float> params,
                       std::span<const std::span<const std::uint32_t>> orders);

  // Examples per herding chunk: per-thread per-example buffers of about 1 MiB, but at least
  // 32 examples and at most 256 (so above 8192 parameters a thread holds 32 x num_params
  // floats: 7.9 MB for LeNet-5).
  int herding_chunk() const { return herding_chunk_; }
  // Scratch held so far (all threads), for the memory report.
  std::size_t scratch_bytes() const;

private:
  struct Scratch {
    std::unique_ptr<Workspace> workspace;
    Eigen::MatrixXf batch;
    std::vector<std::int32_t> labels;
    Vec grad;
    Vec per_example; // herding only
    Vec prefix;
    Vec peak; // element-wise max of |prefix| over a chunk
  };
  Scratch& scratch();
  BatchView gather(Scratch& s, std::span<const std::uint32_t> ids) const;
  // Sum of the gradients of `ids` (the batch mean times the count).
  void chunk_sum(std::span<const float> params, std::span<const std::uint32_t> ids,
                 std::span<float> out);

  const Model& model_;
  const Dataset& train_;
  const Partition& partition_;
  int batch_size_;
  bool herding_;
  int herding_chunk_;
  int max_batch_;
  struct Job {
    int node;
    std::size_t first;
    std::size_t count;
  };
  std::vector<Job> loss_jobs_;
  std::vector<EvalResult> loss_partial_;
  std::vector<std::uint32_t> sequence_;
  Eigen::MatrixXf group_sums_;    // num_params x kGroup chunk sums
  Eigen::MatrixXd group_offsets_; // prefix sums before each chunk of a group
  Eigen::VectorXd total_;         // sum over the whole sequence
  Vec mean_;
  std::vector<double> group_max_;
  tbb::enumerable_thread_specific<std::unique_ptr<Scratch>> scratch_;
};

} // namespace dtsim
