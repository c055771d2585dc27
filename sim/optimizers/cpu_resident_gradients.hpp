// SPDX-License-Identifier: MIT
// The resident backend on the CPU (model.backend: cpu-resident): the reference for a device
// that keeps the node models, momenta and messages itself.
#pragma once

#include "data/dataset.hpp"
#include "models/model.hpp"
#include "sim/core/flat_vector.hpp"
#include "sim/engine/batched_gradients.hpp"
#include "sim/engine/cpu_batched_gradients.hpp"
#include "sim/engine/evaluator.hpp"

#include <array>
#include <initializer_list>
#include <memory>
#include <string>
#include <vector>

namespace dtsim {

// Keeps every node's model, momentum, gradient and every gossip message in its own host
// memory and runs the queued mixing and local steps with the algorithms' own code
// (weighted_sum, LocalUpdate::step) and the gradients with cpu-batched's: a run on it must
// write the trace of `cpu-batched` bit for bit, which tests the engine's resident path (ids
// for messages, models pulled before they are read) on every machine. An algorithm that
// cannot queue its math here (attach_resident) gets it as plain cpu-batched.
class CpuResidentGradients final : public BatchedGradients, public ResidentVectors {
public:
  CpuResidentGradients(const Model& model, const Dataset& train, int batch_size, int nodes);
  std::string describe() const override;
  void compute(std::span<GradientJob> jobs) override;
  void finish(std::span<GradientJob> jobs) override;
  ResidentVectors* resident() override { return this; }
  // Per-node accuracies on the rows kept here, as a device does on its own (the engine's
  // Evaluator code on views of the rows: the same bits as on pulled models, no pull).
  bool evaluate_resident_models(std::span<const float> features,
                                std::span<const std::int32_t> labels,
                                std::span<EvalResult> out) override;

  void set_local_update(const LocalUpdateRule& rule) override;
  void mix_into_model(int node, std::uint32_t self_id, float self_w,
                      std::span<const std::uint32_t> in_ids, std::span<const float> in_w,
                      float lr) override;
  void refresh_after_mix(int node) override;
  void local_step(int node, std::uint32_t out_id, float lr) override;
  void copy_model_to_message(int node, std::uint32_t id) override;
  void write_rule_row(std::span<const int> nodes, int k, std::span<const float> values) override;
  void start_momentum_tracking(int node, std::uint32_t out_id) override;
  // The method's own compressor steps, on this store's vectors (set_codec's host).
  void set_codec(const ResidentCodec& codec, ResidentCodecHost* host) override;
  void encode(int node, VectorRef x, VectorRef wire) override;
  void decode(int node, VectorRef wire, VectorRef ref, VectorRef out) override;
  void own_view(int node, VectorRef wire, VectorRef x, VectorRef out) override;
  void push_models(std::span<const float> models) override;
  void push_initial_model(std::span<const float> model) override;
  void pull_models(std::span<float> models) override;
  void mean_of_rows(VectorRef::Kind rows, std::span<float> out) override;
  double consensus_distance() override;
  void read(VectorRef ref, std::span<float> out) override;

private:
  struct Mix { // queued by a before_gradient hook
    bool queued = false;
    std::uint32_t self = 0;
    float self_w = 1;
    std::vector<std::uint32_t> ids;
    std::vector<float> w;
    float lr = 0; // a quasi-global refresh's, or the lr u a combine-then-adapt mixing subtracts
    bool refresh = false; // refresh_after_mix
  };
  struct Step { // queued by an after_gradient hook
    bool queued = false;
    std::uint32_t out = 0;
    float lr = 0;
  };
  void run_op(VectorOp op, VectorRef dst, VectorRef a, VectorRef b, Scalars k) override;
  std::span<float> model(int node);
  std::span<float> rule_row(int node, int k); // the rule's own rows (rule_rows)
  Vec& message(std::uint32_t id);             // grows the store: engine thread only
  Vec& server(std::uint32_t index);           // made (zero) on first use: engine thread only
  Eigen::VectorXd& sum();                     // the same
  std::span<float> address(VectorRef ref);    // engine thread only
  // The messages among refs, made before any span is taken: making one grows the store.
  void make_messages(std::initializer_list<VectorRef> refs);
  void run_mix(int node);
  void start_momenta(); // zero, where the rule keeps them: a run's start

  const Model& model_;
  std::size_t dim_;
  std::unique_ptr<Evaluator> evaluator_; // on the engine's evaluation examples, made at the first
  std::vector<std::span<const float>> eval_views_;
  CpuBatchedGradients gradients_;
  Eigen::MatrixXf models_; // dim x nodes, laid out as the engine's own
  Eigen::MatrixXf live_;   // dim x nodes once a method names a live model (apply)
  // dim x nodes each, the rule's rows: gradient tracking's y and g_prev, D2's x_prev and
  // lr g_prev, momentum tracking's d, CHOCO-SGD's x_half, xhat and s; and whether each
  // node has made its first step (flags_first_step).
  std::array<Eigen::MatrixXf, 3> rule_rows_;
  std::vector<char> stepped_;
  std::array<Vec, 4> server_; // a server's model, momentum, scratch, DC's mean square, each
                              // once named
  Eigen::VectorXd sum_;       // a parameter server's double sum, once named
  std::vector<Vec> momenta_, grads_, messages_;
  std::vector<Mix> mixes_;
  std::vector<Step> steps_;
  std::vector<GradientJob> jobs_; // the batch's jobs on this memory
  Vec mean_;                      // consensus_distance's scratch
  Vec gbar_;                      // momentum tracking's mean first gradient, until every start
  Eigen::Index starts_ = 0;       // momentum tracking's nodes started
  LocalUpdateRule rule_;
  ResidentCodecHost* codec_ = nullptr;
};

} // namespace dtsim
