// SPDX-License-Identifier: MIT
// GSGM server: white-list scheduling, partial averaging, global momentum.
#include "sim/optimizers/gsgm.hpp"

#include "sim/engine/resident_vectors.hpp"
#include "sim/optimizers/server_step.hpp"
#include "sim/optimizers/vector_ops.hpp"

#include <algorithm>

namespace dtsim {

Gsgm::Gsgm(const Params& p, const AlgorithmSetup& setup)
    : ParameterServer(p, setup), schedule_(p.flag("schedule", true)),
      slack_(p.integer("slack", 1, Range::at_least(1))), average_(p.flag("average", true)),
      average_by_window_(p.choice("average_by", "window", {"window", "last"}) == "window"),
      window_(average_by_window_ ? p.integer("window", setup.nodes, Range::non_negative()) : 0),
      last_(average_by_window_
                ? 0
                : static_cast<std::size_t>(p.integer("last", 4, Range::between(1, setup.nodes)))),
      global_momentum_(p.flag("global_momentum", true)),
      momentum_(global_momentum_
                    ? static_cast<float>(p.number("momentum", 0.9, Range::unit_open_hi()))
                    : 0.0f),
      dim_(setup.num_params), age_(static_cast<std::size_t>(setup.nodes), -1),
      count_(static_cast<std::size_t>(setup.nodes), 0) {
  const auto d = static_cast<Eigen::Index>(setup.num_params);
  if (p.choice("base", "sgd", {"sgd", "dc-asgd"}) == "dc-asgd")
    dc_ = std::make_unique<DelayCompensation>(p.child("dc"), setup.nodes, setup.num_params);
  avg_.resize(d);
  if (average_) {
    sum_ = Eigen::VectorXd::Zero(d);
    member_.assign(static_cast<std::size_t>(setup.nodes), false);
  }
  if (momentum_ > 0)
    m_ = Vec::Zero(d);
  recent_.reserve(static_cast<std::size_t>(setup.nodes));
}

std::string Gsgm::describe() const {
  std::string s = "gsgm (";
  s += schedule_ ? "schedule slack " + std::to_string(slack_) : "no schedule";
  s += average_ ? (average_by_window_ ? ", average window " + std::to_string(window_)
                                      : ", average last " + std::to_string(last_))
                : ", no averaging";
  s += global_momentum_ ? ", global momentum " + format_number(static_cast<double>(momentum_))
                        : ", no momentum";
  if (dc_)
    s += ", base dc-asgd " + dc_->describe();
  return s + describe_server() + ")";
}

std::size_t Gsgm::state_bytes() const {
  // The table is made at the start unless a resident backend keeps it.
  const std::size_t table = resident() ? 0 : count_.size() * dim_;
  return ParameterServer::state_bytes() + (dc_ ? dc_->state_bytes() : 0) +
         (table + static_cast<std::size_t>(m_.size() + avg_.size())) * sizeof(float) +
         static_cast<std::size_t>(sum_.size()) * sizeof(double);
}

void Gsgm::on_start(Context& ctx) {
  if (resident())
    return;
  // Made here, once attach_resident has had its say: a resident backend keeps the rows.
  table_.resize(static_cast<Eigen::Index>(dim_), ctx.num_nodes());
  if (dc_)
    dc_->remember_all(w_);
}

std::int64_t Gsgm::min_count() const {
  return *std::min_element(count_.begin(), count_.end());
}

bool Gsgm::eligible(int worker) const {
  return !schedule_ || count_[static_cast<std::size_t>(worker)] - min_count() < slack_;
}

void Gsgm::apply(Context& ctx, int worker, std::span<const float> g, std::int64_t tau) {
  const auto k = static_cast<std::size_t>(worker);
  // The running sum of A's gradients loses G[k]'s old value before it is overwritten.
  const bool was_member = average_ && member_[k];
  ++count_[k];
  age_[k] = version_;
  recent_.erase(std::remove(recent_.begin(), recent_.end(), worker), recent_.end());
  recent_.insert(recent_.begin(), worker);
  if (resident())
    step_resident(worker, was_member);
  else
    step_host(worker, g, was_member);
  ++version_;
  if (dc_ && !resident())
    dc_->remember(worker, w_);
  record_update(ctx, worker, version_ - 1 - tau);
  reply(ctx, worker);
}

void Gsgm::step_host(int worker, std::span<const float> g, bool was_member) {
  auto gk = table_.col(worker);
  const std::span<float> row{gk.data(), static_cast<std::size_t>(gk.size())};
  if (was_member)
    accumulate_rows(sum_, row, false);
  gk = as_vec(g);
  if (dc_)
    dc_->compensate(worker, row, w_);
  if (!average_) {
    server_step(w_, m_, gk, lr_, momentum_, weight_decay_);
    return;
  }
  update_members(worker);
  mean_of_sum({avg_.data(), static_cast<std::size_t>(avg_.size())}, sum_,
              static_cast<double>(members_));
  server_step(w_, m_, avg_, lr_, momentum_, weight_decay_);
}

// The same steps queued on the resident backend: G[j] is worker j's live row there, the
// double sum its server_sum, the mean its server scratch; without averaging the gradient
// is served from the worker's gradient row, as ASGD's.
void Gsgm::step_resident(int worker, bool was_member) {
  ResidentVectors& r = *resident();
  const VectorRef row = average_ ? VectorRef::live(worker) : VectorRef::gradient(worker);
  if (was_member)
    r.apply(VectorOp::accumulate, VectorRef::server_sum(), row, {}, -1.0f);
  if (average_)
    r.apply(VectorOp::copy, row, VectorRef::gradient(worker));
  if (dc_) // the worker's model row is the model it pulled: DC's backup
    dc_->compensate_resident(r, row, worker);
  VectorRef direction = row;
  if (average_) {
    update_members(worker);
    r.apply(VectorOp::mean_of_sum, VectorRef::server_scratch(), VectorRef::server_sum(), {},
            static_cast<float>(members_));
    direction = VectorRef::server_scratch();
  }
  r.apply(VectorOp::server_step, VectorRef::server_model(), direction, VectorRef::server_momentum(),
          lr_, momentum_, weight_decay_);
}

// A = {worker} + the fresh workers. Only membership changes touch the d-vector sum (in
// double, so that the running sum does not drift from the exact mean): about three vector
// operations per update instead of |A|, whatever n.
void Gsgm::update_members(int worker) {
  const auto recent_end =
      recent_.begin() + static_cast<std::ptrdiff_t>(std::min(last_, recent_.size()));
  members_ = 0;
  for (int j = 0; j < nodes_; ++j) {
    const auto u = static_cast<std::size_t>(j);
    const std::int64_t age = age_[u];
    const bool fresh = average_by_window_ ? age >= 0 && version_ - age <= window_
                                          : std::find(recent_.begin(), recent_end, j) != recent_end;
    const bool member = j == worker || fresh;
    if (j == worker)
      add_row(j, true); // its old value left the sum in apply()
    else if (member && !member_[u])
      add_row(j, true);
    else if (!member && member_[u])
      add_row(j, false);
    member_[u] = member;
    members_ += member ? 1 : 0;
  }
}

void Gsgm::add_row(int j, bool add) {
  if (resident())
    resident()->apply(VectorOp::accumulate, VectorRef::server_sum(), VectorRef::live(j), {},
                      add ? 1.0f : -1.0f);
  else
    accumulate_rows(sum_, {table_.col(j).data(), static_cast<std::size_t>(table_.rows())}, add);
}

void Gsgm::release_host_state() {
  table_ = Eigen::MatrixXf();
  sum_ = Eigen::VectorXd();
  m_ = Vec();
  avg_ = Vec();
  if (dc_)
    dc_->release();
}

void Gsgm::add_metrics(std::vector<std::pair<std::string, double>>& columns) const {
  ParameterServer::add_metrics(columns);
  columns.emplace_back(
      "update_count_spread",
      static_cast<double>(*std::max_element(count_.begin(), count_.end()) - min_count()));
}

} // namespace dtsim
