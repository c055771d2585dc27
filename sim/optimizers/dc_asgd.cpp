// SPDX-License-Identifier: MIT
// The DC-ASGD server update.
#include "sim/optimizers/dc_asgd.hpp"

#include "sim/engine/resident_vectors.hpp"
#include "sim/optimizers/server_step.hpp"

namespace dtsim {

DcAsgd::DcAsgd(const Params& p, const AlgorithmSetup& setup)
    : ParameterServer(p, setup), dc_(p, setup.nodes, setup.num_params),
      momentum_(static_cast<float>(p.number("momentum", 0.0, Range::unit_open_hi()))),
      u_(static_cast<Eigen::Index>(setup.num_params)) {
  if (momentum_ > 0)
    m_ = Vec::Zero(static_cast<Eigen::Index>(setup.num_params));
}

std::string DcAsgd::describe() const {
  return "dc-asgd (" + dc_.describe() + describe_server() + ")";
}

std::size_t DcAsgd::state_bytes() const {
  return ParameterServer::state_bytes() + dc_.state_bytes() +
         static_cast<std::size_t>(m_.size() + u_.size()) * sizeof(float);
}

void DcAsgd::on_start(Context&) {
  if (!resident())
    dc_.remember_all(w_);
}

void DcAsgd::release_host_state() {
  dc_.release();
  m_ = Vec();
  u_ = Vec();
}

void DcAsgd::apply(Context& ctx, int worker, std::span<const float> g, std::int64_t tau) {
  if (resident()) { // compensated in the worker's gradient row, against its model row (w_bak)
    ResidentVectors& r = *resident();
    dc_.compensate_resident(r, VectorRef::gradient(worker), worker);
    r.apply(VectorOp::server_step, VectorRef::server_model(), VectorRef::gradient(worker),
            VectorRef::server_momentum(), lr_, momentum_, weight_decay_);
  } else {
    u_ = as_vec(g);
    dc_.compensate(worker, {u_.data(), static_cast<std::size_t>(u_.size())}, w_);
    server_step(w_, m_, u_, lr_, momentum_, weight_decay_);
    dc_.remember(worker, w_);
  }
  ++version_;
  record_update(ctx, worker, version_ - 1 - tau);
  reply(ctx, worker);
}

} // namespace dtsim
