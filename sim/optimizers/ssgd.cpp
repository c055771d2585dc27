// SPDX-License-Identifier: MIT
// Round-based averaging at the server.
#include "sim/optimizers/ssgd.hpp"

#include "sim/core/errors.hpp"
#include "sim/optimizers/server_step.hpp"

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
  sum_ += as_vec(g);
  waiting_.push_back(worker);
  if (static_cast<int>(waiting_.size()) < nodes_)
    return;
  sum_ /= static_cast<float>(nodes_);
  server_step(w_, m_, sum_, lr_, momentum_, weight_decay_);
  sum_.setZero();
  ++version_;
  for (int k : waiting_) {
    record_update(ctx, k, 0);
    reply(ctx, k);
  }
  waiting_.clear();
}

} // namespace dtsim
