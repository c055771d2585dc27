// SPDX-License-Identifier: MIT
// The ASGD server update.
#include "sim/optimizers/asgd.hpp"

#include "sim/engine/resident_vectors.hpp"
#include "sim/optimizers/server_step.hpp"

namespace dtsim {

Asgd::Asgd(const Params& p, const AlgorithmSetup& setup)
    : ParameterServer(p, setup), momentum_text_(p.number("momentum", 0.0, Range::unit_open_hi())),
      momentum_(static_cast<float>(momentum_text_)) {
  if (momentum_ > 0)
    m_ = Vec::Zero(static_cast<Eigen::Index>(setup.num_params));
}

std::string Asgd::describe() const {
  return "asgd (parameter server" +
         (momentum_ > 0 ? ", server momentum " + format_number(momentum_text_) : std::string()) +
         describe_server() + ")";
}

std::size_t Asgd::state_bytes() const {
  return ParameterServer::state_bytes() + static_cast<std::size_t>(m_.size()) * sizeof(float);
}

void Asgd::apply(Context& ctx, int worker, std::span<const float> g, std::int64_t tau) {
  if (resident()) // the gradient is in the worker's row
    resident()->apply(VectorOp::server_step, VectorRef::server_model(), VectorRef::gradient(worker),
                      VectorRef::server_momentum(), lr_, momentum_, weight_decay_);
  else
    server_step(w_, m_, as_vec(g), lr_, momentum_, weight_decay_);
  ++version_;
  record_update(ctx, worker, version_ - 1 - tau);
  reply(ctx, worker);
}

} // namespace dtsim
