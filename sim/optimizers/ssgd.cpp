// SPDX-License-Identifier: MIT
// Round-based averaging at the server.
#include "sim/optimizers/ssgd.hpp"

#include "sim/core/errors.hpp"
#include "sim/engine/resident_vectors.hpp"
#include "sim/optimizers/server_step.hpp"
#include "sim/optimizers/vector_ops.hpp"

namespace dtsim {

Ssgd::Ssgd(const Params& p, const AlgorithmSetup& setup)
    : ParameterServer(p, setup), momentum_text_(p.number("momentum", 0.0, Range::unit_open_hi())),
      momentum_(static_cast<float>(momentum_text_)),
      sum_(Vec::Zero(static_cast<Eigen::Index>(setup.num_params))) {
  if (momentum_ > 0)
    m_ = Vec::Zero(static_cast<Eigen::Index>(setup.num_params));
  waiting_.reserve(static_cast<std::size_t>(setup.nodes));
}

std::string Ssgd::describe() const {
  return "ssgd (synchronous parameter server" +
         (momentum_ > 0 ? ", server momentum " + format_number(momentum_text_) : std::string()) +
         describe_server() + ")";
}

std::size_t Ssgd::state_bytes() const {
  return ParameterServer::state_bytes() +
         static_cast<std::size_t>(m_.size() + sum_.size()) * sizeof(float);
}

void Ssgd::apply(Context& ctx, int worker, std::span<const float> g, std::int64_t tau) {
  DTSIM_ASSERT(tau == version_, "SSGD received a gradient from another round");
  // The steps of vector_ops.hpp on the host, or queued on the resident backend (the sum in
  // the server's scratch vector, each gradient served from its worker's row): the same bits.
  ResidentVectors* r = resident();
  const std::span<float> sum{sum_.data(), static_cast<std::size_t>(sum_.size())};
  if (r)
    r->apply(VectorOp::add, VectorRef::server_scratch(), VectorRef::gradient(worker));
  else
    apply_vector_op(VectorOp::add, sum, g, {}, 0.0f);
  waiting_.push_back(worker);
  if (static_cast<int>(waiting_.size()) < nodes_)
    return;
  const auto n = static_cast<float>(nodes_);
  if (r) {
    r->apply(VectorOp::divide, VectorRef::server_scratch(), {}, {}, n);
    r->apply(VectorOp::server_step, VectorRef::server_model(), VectorRef::server_scratch(),
             VectorRef::server_momentum(), lr_, momentum_, weight_decay_);
    r->apply(VectorOp::zero, VectorRef::server_scratch(), {});
  } else {
    apply_vector_op(VectorOp::divide, sum, {}, {}, n);
    server_step(w_, m_, sum_, lr_, momentum_, weight_decay_);
    apply_vector_op(VectorOp::zero, sum, {}, {}, 0.0f);
  }
  ++version_;
  for (int k : waiting_) {
    record_update(ctx, k, 0);
    reply(ctx, k);
  }
  waiting_.clear();
}

} // namespace dtsim
