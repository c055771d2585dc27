// SPDX-License-Identifier: MIT
// The resident backend on the CPU: queued mixing, gradients, queued local steps.
#include "sim/optimizers/cpu_resident_gradients.hpp"

#include "sim/core/errors.hpp"
#include "sim/engine/consensus_distance.hpp"
#include "sim/optimizers/choco_sgd.hpp"
#include "sim/optimizers/d2.hpp"
#include "sim/optimizers/gossip_protocol.hpp"
#include "sim/optimizers/gradient_tracking.hpp"
#include "sim/optimizers/local_update.hpp"
#include "sim/optimizers/momentum_tracking.hpp"
#include "sim/optimizers/quasi_global.hpp"
#include "sim/optimizers/server_step.hpp"
#include "sim/optimizers/vector_ops.hpp"
#include "sim/optimizers/weighted_sum.hpp"

#include <algorithm>
#include <array>
#include <tbb/parallel_for.h>

namespace dtsim {

CpuResidentGradients::CpuResidentGradients(const Model& model, const Dataset& train, int batch_size,
                                           int nodes)
    : model_(model), dim_(model.num_params()), gradients_(model, train, batch_size),
      models_(static_cast<Eigen::Index>(dim_), nodes), grads_(static_cast<std::size_t>(nodes)),
      mixes_(static_cast<std::size_t>(nodes)), steps_(static_cast<std::size_t>(nodes)) {
  // Set aside, not written (a copy of one Vec would write every page): a method that does not
  // attach never touches them.
  for (Vec& g : grads_)
    g.resize(static_cast<Eigen::Index>(dim_));
  jobs_.reserve(static_cast<std::size_t>(nodes));
}

std::string CpuResidentGradients::describe() const {
  return "cpu-resident (" + model_.describe() + ")";
}

std::span<float> CpuResidentGradients::model(int node) {
  return {models_.col(node).data(), dim_};
}

std::span<float> CpuResidentGradients::rule_row(int node, int k) {
  return {rule_rows_[static_cast<std::size_t>(k)].col(node).data(), dim_};
}

void CpuResidentGradients::set_local_update(const LocalUpdateRule& rule) {
  rule_ = rule;
  for (int k = 0; k < rule.rule_rows(); ++k)
    rule_rows_.at(static_cast<std::size_t>(k)) =
        Eigen::MatrixXf::Zero(static_cast<Eigen::Index>(dim_), models_.cols());
  if (rule.flags_first_step())
    stepped_.assign(static_cast<std::size_t>(models_.cols()), 0);
}

Vec& CpuResidentGradients::message(std::uint32_t id) {
  while (messages_.size() <= id)
    messages_.emplace_back(static_cast<Eigen::Index>(dim_ * rule_.message_vectors()));
  return messages_[id];
}

void CpuResidentGradients::mix_into_model(int node, std::uint32_t self_id, float self_w,
                                          std::span<const std::uint32_t> in_ids,
                                          std::span<const float> in_w, float lr) {
  Mix& m = mixes_[static_cast<std::size_t>(node)];
  m.queued = true;
  m.lr = lr;
  m.self = self_id;
  m.self_w = self_w;
  m.ids.assign(in_ids.begin(), in_ids.end()); // capacity kept: no allocation after the first
  m.w.assign(in_w.begin(), in_w.end());
  m.refresh = false;
}

void CpuResidentGradients::refresh_after_mix(int node) {
  Mix& m = mixes_[static_cast<std::size_t>(node)];
  DTSIM_ASSERT(m.queued && rule_.quasi_global && rule_.refresh_period > 1,
               "refresh_after_mix: a queued mixing of a rule with a refresh period");
  m.refresh = true;
}

void CpuResidentGradients::local_step(int node, std::uint32_t out_id, float lr) {
  DTSIM_ASSERT(out_id != kNoMessage || rule_.combine_then_adapt,
               "resident local step: no message, but a rule that sends one");
  steps_[static_cast<std::size_t>(node)] = Step{true, out_id, lr};
}

void CpuResidentGradients::copy_model_to_message(int node, std::uint32_t id) {
  message(id).head(static_cast<Eigen::Index>(dim_)) = models_.col(node);
}

void CpuResidentGradients::start_momentum_tracking(int node, std::uint32_t out_id) {
  DTSIM_ASSERT(rule_.momentum_tracking, "start_momentum_tracking without its rule");
  if (starts_ == 0) { // every node's g0 is in its row d: their mean, as the all-reduce's
    gbar_.resize(static_cast<Eigen::Index>(dim_));
    mean_of_columns(rule_rows_[0], {gbar_.data(), dim_});
  }
  MomentumTracking::initialise(rule_.momentum, rule_.weight_decay, {gbar_.data(), dim_},
                               model(node), rule_row(node, 0),
                               {momenta_[static_cast<std::size_t>(node)].data(), dim_},
                               {message(out_id).data() + dim_, dim_});
  if (++starts_ == models_.cols())
    Vec().swap(gbar_);
}

void CpuResidentGradients::make_messages(std::initializer_list<VectorRef> refs) {
  for (const VectorRef r : refs)
    if (r.kind == VectorRef::Kind::message)
      message(r.index);
}

void CpuResidentGradients::set_codec(const ResidentCodec& /*codec*/, ResidentCodecHost* host) {
  codec_ = host;
}

void CpuResidentGradients::encode(int node, VectorRef x, VectorRef wire) {
  DTSIM_ASSERT(codec_, "resident encode without a codec");
  make_messages({x, wire});
  codec_->encode(node, address(x), address(wire));
}

void CpuResidentGradients::decode(int node, VectorRef wire, VectorRef ref, VectorRef out) {
  DTSIM_ASSERT(codec_, "resident decode without a codec");
  make_messages({wire, ref, out});
  codec_->decode(node, address(wire), address(ref), address(out));
}

void CpuResidentGradients::own_view(int node, VectorRef wire, VectorRef x, VectorRef out) {
  DTSIM_ASSERT(codec_, "resident own_view without a codec");
  make_messages({wire, x, out});
  codec_->own_view(node, address(wire), address(x), address(out));
}

void CpuResidentGradients::write_rule_row(std::span<const int> nodes, int k,
                                          std::span<const float> values) {
  DTSIM_ASSERT(k < rule_.rule_rows() && values.size() == dim_, "write_rule_row: no such row");
  for (const int node : nodes)
    as_vec(rule_row(node, k)) = as_vec(values);
}

std::span<float> CpuResidentGradients::address(VectorRef ref) {
  const auto i = static_cast<Eigen::Index>(ref.index);
  switch (ref.kind) {
  case VectorRef::Kind::model:
    return model(static_cast<int>(ref.index));
  case VectorRef::Kind::gradient:
    return {grads_[ref.index].data(), dim_};
  case VectorRef::Kind::live:
    if (live_.size() == 0)
      live_.resize(static_cast<Eigen::Index>(dim_), models_.cols());
    return {live_.col(i).data(), dim_};
  case VectorRef::Kind::message: // its first vector
    return {message(ref.index).data(), dim_};
  case VectorRef::Kind::server:
    return {server(ref.index).data(), dim_};
  case VectorRef::Kind::sum: // double: run_op reaches it through sum() alone
  case VectorRef::Kind::none:
    break;
  }
  return {};
}

Vec& CpuResidentGradients::server(std::uint32_t index) {
  Vec& v = server_.at(index);
  if (v.size() == 0) // each on first use: no momentum, no momentum vector
    v = Vec::Zero(static_cast<Eigen::Index>(dim_));
  return v;
}

Eigen::VectorXd& CpuResidentGradients::sum() {
  if (sum_.size() == 0)
    sum_ = Eigen::VectorXd::Zero(static_cast<Eigen::Index>(dim_));
  return sum_;
}

void CpuResidentGradients::run_op(VectorOp op, VectorRef dst, VectorRef a, VectorRef b, Scalars k) {
  if (op == VectorOp::server_step) { // ASGD's own code, on the server's Vecs
    DTSIM_ASSERT(dst.kind == VectorRef::Kind::server && b.kind == VectorRef::Kind::server,
                 "server_step: dst and b are the server's model and momentum");
    const std::span<const float> g = address(a);
    Vec& m = k.t > 0 ? server(b.index) : server_.at(b.index); // read only with momentum
    server_step(server(dst.index), m, as_vec(g), k.s, k.t, k.u);
    return;
  }
  if (op == VectorOp::accumulate) { // GSGM's code on its double sum
    DTSIM_ASSERT(dst.kind == VectorRef::Kind::sum, "accumulate: dst is the server sum");
    accumulate_rows(sum(), address(a), k.s > 0);
    return;
  }
  if (op == VectorOp::mean_of_sum) {
    DTSIM_ASSERT(a.kind == VectorRef::Kind::sum, "mean_of_sum: a is the server sum");
    mean_of_sum(address(dst), sum(), static_cast<double>(k.s));
    return;
  }
  make_messages({dst, a, b});
  apply_vector_op(op, address(dst), address(a), address(b), k.s, k.t);
}

void CpuResidentGradients::read(VectorRef ref, std::span<float> out) {
  as_vec(out) = as_vec(std::span<const float>(address(ref)));
}

void CpuResidentGradients::mean_of_rows(VectorRef::Kind rows, std::span<float> out) {
  DTSIM_ASSERT(rows == VectorRef::Kind::model || rows == VectorRef::Kind::live,
               "mean_of_rows: models or live models");
  mean_of_columns(rows == VectorRef::Kind::model ? models_ : live_, out);
}

double CpuResidentGradients::consensus_distance() {
  return dtsim::consensus_distance(models_, mean_);
}

void CpuResidentGradients::push_models(std::span<const float> models) {
  DTSIM_ASSERT(models.size() == static_cast<std::size_t>(models_.size()), "push_models: size");
  std::copy(models.begin(), models.end(), models_.data());
  start_momenta();
}

void CpuResidentGradients::push_initial_model(std::span<const float> model) {
  DTSIM_ASSERT(model.size() == dim_, "push_initial_model: size");
  // Copies only: any thread, the same bits (and the first touch of the pages spread).
  tbb::parallel_for(Eigen::Index{0}, models_.cols(),
                    [&](Eigen::Index node) { models_.col(node) = as_vec(model); });
  start_momenta();
}

void CpuResidentGradients::start_momenta() {
  if (!rule_.keeps_momentum())
    return;
  if (momenta_.empty())
    momenta_.assign(grads_.size(), Vec::Zero(static_cast<Eigen::Index>(dim_)));
  else
    for (Vec& m : momenta_)
      m.setZero();
}

bool CpuResidentGradients::evaluate_resident_models(std::span<const float> features,
                                                    std::span<const std::int32_t> labels,
                                                    std::span<EvalResult> out) {
  DTSIM_ASSERT(!labels.empty() && features.size() % labels.size() == 0 &&
                   out.size() == static_cast<std::size_t>(models_.cols()),
               "evaluate_resident_models: examples or results of the wrong size");
  const int num_features = static_cast<int>(features.size() / labels.size());
  if (!evaluator_ || evaluator_->features(evaluator_->count()).data() != features.data() ||
      evaluator_->count() != labels.size())
    evaluator_ = std::make_unique<Evaluator>(model_, features, num_features, labels, 0);
  eval_views_.clear();
  for (Eigen::Index i = 0; i < models_.cols(); ++i)
    eval_views_.push_back({models_.col(i).data(), dim_});
  evaluator_->evaluate_many(eval_views_, labels.size(), out);
  return true;
}

void CpuResidentGradients::pull_models(std::span<float> models) {
  DTSIM_ASSERT(models.size() == static_cast<std::size_t>(models_.size()), "pull_models: size");
  std::copy(models_.data(), models_.data() + models_.size(), models.begin());
}

// GossipProtocol::mix's blocks, so that every element takes the same instructions; with a
// quasi-global rule, QgDsgdm::combine's: each block mixed aside, then the buffer refreshed
// (with a refresh period: the displacement summed in the rule's row, and the buffer
// refreshed from it after the last block where the hook asked; DecentLam::combine's
// likewise, its momentum applied).
void CpuResidentGradients::run_mix(int node) {
  Mix& m = mixes_[static_cast<std::size_t>(node)];
  m.queued = false;
  const auto input = [&](std::size_t c) -> const float* { return messages_[m.ids[c]].data(); };
  if (rule_.momentum_tracking) { // MomentumTracking::combine's
    float* x = model(node).data();
    const std::span<const float> mom{momenta_[static_cast<std::size_t>(node)].data(), dim_};
    weighted_sum_blocked(m.self_w, x, m.w, input, dim_, x, GossipProtocol::kBlock);
    MomentumTracking::descend(m.lr, model(node), mom, rule_row(node, 0));
    weighted_sum_blocked(
        m.self_w, messages_[m.self].data() + dim_, m.w,
        [&](std::size_t c) { return input(c) + dim_; }, dim_, rule_row(node, 0).data(),
        GossipProtocol::kBlock);
    MomentumTracking::correct(rule_row(node, 0), mom);
    return;
  }
  if (rule_.choco) { // ChocoSgd::combine's: the q mixed in the gradient's row, then s and x
    float* mixed = grads_[static_cast<std::size_t>(node)].data();
    weighted_sum_blocked(m.self_w, messages_[m.self].data(), m.w, input, dim_, mixed,
                         GossipProtocol::kBlock);
    ChocoSgd::consensus(rule_.choco_adapt_then_combine, rule_.gamma, {mixed, dim_},
                        rule_row(node, 2), rule_row(node, 0), rule_row(node, 1), model(node));
    return;
  }
  if (rule_.combine_then_adapt) { // Dsgd::combine's mix(node, 0, x, x); x -= lr u
    DTSIM_ASSERT(m.self == kOwnModel, "combine-then-adapt mixes the node's own model");
    float* x = model(node).data();
    weighted_sum_blocked(m.self_w, x, m.w, input, dim_, x, GossipProtocol::kBlock);
    as_vec(model(node)) -= m.lr * grads_[static_cast<std::size_t>(node)];
    if (rule_.gradient_tracking) { // GradientTracking::combine's mix(node, 1, y, y)
      float* y = rule_row(node, 0).data();
      weighted_sum_blocked(
          m.self_w, y, m.w, [&](std::size_t c) { return input(c) + dim_; }, dim_, y,
          GossipProtocol::kBlock);
    }
    return;
  }
  if (!rule_.quasi_global && !rule_.decentlam) {
    weighted_sum_blocked(m.self_w, messages_[m.self].data(), m.w, input, dim_, model(node).data(),
                         GossipProtocol::kBlock);
    return;
  }
  float* x = model(node).data();
  float* mhat = momenta_[static_cast<std::size_t>(node)].data();
  std::array<float, GossipProtocol::kBlock> mixed;
  for (std::size_t first = 0; first < dim_; first += GossipProtocol::kBlock) {
    const std::size_t len = std::min(GossipProtocol::kBlock, dim_ - first);
    weighted_sum(
        m.self_w, messages_[m.self].data() + first, m.w,
        [&](std::size_t c) { return input(c) + first; }, len, mixed.data());
    if (rule_.decentlam) // DecentLam::combine's
      decentlam_momentum(rule_.mu, m.lr, x + first, mixed.data(), mhat + first, len);
    else if (rule_.refresh_period > 1)
      quasi_global_accumulate(m.lr, x + first, mixed.data(), rule_row(node, 0).data() + first, len);
    else
      quasi_global_refresh(rule_.mu, m.lr, x + first, mixed.data(), mhat + first, len);
  }
  if (m.refresh)
    quasi_global_refresh_every(rule_.mu, rule_.refresh_period, {mhat, dim_}, rule_row(node, 0));
}

void CpuResidentGradients::compute(std::span<GradientJob> jobs) {
  if (jobs.empty() || !jobs.front().params.empty()) { // not resident: plain cpu-batched
    gradients_.compute(jobs);
    return;
  }
  const auto each = [&jobs](auto&& body) {
    tbb::parallel_for(tbb::blocked_range<std::size_t>(0, jobs.size(), 1),
                      [&](const tbb::blocked_range<std::size_t>& r) {
                        for (std::size_t j = r.begin(); j != r.end(); ++j)
                          body(jobs[j].node);
                      });
  };
  each([this](int node) {
    if (mixes_[static_cast<std::size_t>(node)].queued)
      run_mix(node);
  });
  jobs_.clear();
  for (const GradientJob& job : jobs) {
    Vec& g = grads_[static_cast<std::size_t>(job.node)];
    jobs_.push_back({model(job.node), job.indices, {g.data(), dim_}, 0.0, job.node});
  }
  gradients_.compute(jobs_);
  for (std::size_t j = 0; j < jobs.size(); ++j)
    jobs[j].loss = jobs_[j].loss;
}

void CpuResidentGradients::finish(std::span<GradientJob> jobs) {
  // The messages the steps write, made here (on the engine thread) before the parallel part.
  for (const GradientJob& job : jobs)
    if (const Step& s = steps_[static_cast<std::size_t>(job.node)]; s.queued && s.out != kNoMessage)
      message(s.out);
  tbb::parallel_for(
      tbb::blocked_range<std::size_t>(0, jobs.size(), 1),
      [&](const tbb::blocked_range<std::size_t>& r) {
        for (std::size_t j = r.begin(); j != r.end(); ++j) {
          const int node = jobs[j].node;
          Step& s = steps_[static_cast<std::size_t>(node)];
          if (!s.queued)
            continue;
          s.queued = false;
          Vec& g = grads_[static_cast<std::size_t>(node)];
          const std::span<float> m =
              momenta_.empty()
                  ? std::span<float>()
                  : std::span<float>(momenta_[static_cast<std::size_t>(node)].data(), dim_);
          if (rule_.choco) { // ChocoSgd::local_step's: the difference in the gradient's row
            const std::span<float> x_half = rule_row(node, 0);
            const std::span<float> xhat = rule_row(node, 1);
            const std::span<float> diff{g.data(), dim_};
            const std::span<float> q{messages_[s.out].data(), dim_};
            LocalUpdate::step(rule_, diff, model(node), s.lr, m, x_half);
            ChocoSgd::difference(rule_.choco_adapt_then_combine, rule_.gamma, x_half, xhat,
                                 rule_row(node, 2), diff);
            rule_.encoder->encode(node, diff, q);
            ChocoSgd::estimate(xhat, q);
            continue;
          }
          if (rule_.flags_first_step()) {
            char& stepped = stepped_[static_cast<std::size_t>(node)];
            const bool first = stepped == 0;
            stepped = 1;
            Vec& out = messages_[s.out];
            if (rule_.momentum_tracking) { // MomentumTracking::local_step's
              out.head(static_cast<Eigen::Index>(dim_)) = as_vec(model(node));
              if (first) // g0 kept in d for the all-reduce (start_momentum_tracking)
                as_vec(rule_row(node, 0)) = g;
              else
                MomentumTracking::step(rule_.momentum, rule_.weight_decay, {g.data(), dim_},
                                       model(node), m, rule_row(node, 0),
                                       {out.data() + dim_, dim_});
              continue;
            }
            if (rule_.d2) { // D2::local_step's
              D2::correct(first, rule_.weight_decay, s.lr, {g.data(), dim_}, model(node),
                          rule_row(node, 0), rule_row(node, 1), {out.data(), dim_});
              continue;
            }
            // GradientTracking::local_step's: u kept, (x, y) sent
            GradientTracking::track(rule_, first, {g.data(), dim_}, model(node), rule_row(node, 0),
                                    rule_row(node, 1), m, {g.data(), dim_});
            out.head(static_cast<Eigen::Index>(dim_)) = as_vec(model(node));
            out.tail(static_cast<Eigen::Index>(dim_)) = as_vec(rule_row(node, 0));
            continue;
          }
          if (rule_.combine_then_adapt) { // u kept in the gradient's place for the mixing
            LocalUpdate::direction(rule_, {g.data(), dim_}, model(node), m, {g.data(), dim_});
            if (s.out != kNoMessage)
              messages_[s.out] = as_vec(model(node));
            continue;
          }
          LocalUpdate::step(rule_, {g.data(), dim_}, model(node), s.lr, m,
                            {messages_[s.out].data(), dim_});
        }
      });
}

} // namespace dtsim
