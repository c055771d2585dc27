// SPDX-License-Identifier: MIT
// Parameter-server protocol of ASGD.
#include "sim/optimizers/asgd.hpp"

#include "sim/core/errors.hpp"

namespace dtsim {

Asgd::Asgd(const Params& p, const AlgorithmSetup& setup)
    : lr_(static_cast<float>(p.number("lr", 0.05, Range::positive()))),
      momentum_text_(p.number("momentum", 0.0, Range::unit_open_hi())),
      momentum_(static_cast<float>(momentum_text_)),
      weight_decay_(static_cast<float>(p.number("weight_decay", 0.0, Range::non_negative()))),
      w_(static_cast<Eigen::Index>(setup.num_params)),
      workers_(static_cast<std::size_t>(setup.nodes)) {
  if (momentum_ > 0)
    m_ = Vec::Zero(static_cast<Eigen::Index>(setup.num_params));
}

std::string Asgd::describe() const {
  return "asgd (parameter server" +
         (momentum_ > 0 ? ", server momentum " + format_number(momentum_text_) : std::string()) +
         ")";
}

std::size_t Asgd::state_bytes() const {
  return static_cast<std::size_t>(w_.size() + m_.size()) * sizeof(float);
}

void Asgd::start(Context& ctx) {
  w_ = as_vec(ctx.params_view(0));
  for (int i = 0; i < ctx.num_nodes(); ++i) {
    workers_[static_cast<std::size_t>(i)].out = ctx.new_buffer();
    ctx.start_gradient(i, version_);
  }
}

void Asgd::before_gradient(int node, std::span<float> x) {
  Worker& w = workers_[static_cast<std::size_t>(node)];
  if (w.pulled)
    as_vec(x) = as_vec(w.pulled.view());
}

void Asgd::after_gradient(int node, std::span<const float>, std::span<float> grad) {
  as_vec(workers_[static_cast<std::size_t>(node)].out.data()) = as_vec(grad);
}

void Asgd::on_gradient(Context& ctx, int node, const GradientResult& r) {
  Worker& w = workers_[static_cast<std::size_t>(node)];
  w.pulled = SharedBuffer();
  w.wait_start = ctx.now();
  ctx.send(node, ctx.server(), MessageInfo{kGradient, r.tag, 0}, std::move(w.out));
  w.out = SharedBuffer();
}

void Asgd::on_message(Context& ctx, const Message& msg) {
  if (msg.dst == ctx.server()) {
    DTSIM_ASSERT(msg.info.tag == kGradient, "ASGD server expects gradients");
    ConstVecMap g = as_vec(msg.payload.view());
    if (momentum_ > 0) {
      m_ = momentum_ * m_ + g + weight_decay_ * w_;
      w_ -= lr_ * m_;
    } else if (weight_decay_ > 0) {
      w_ -= lr_ * (g + weight_decay_ * w_);
    } else {
      w_ -= lr_ * g;
    }
    ++version_;
    ctx.record_update(msg.src, version_ - 1 - msg.info.version);
    SharedBuffer reply = ctx.new_buffer();
    as_vec(reply.data()) = w_;
    ctx.send(ctx.server(), msg.src, MessageInfo{kModel, version_, 0}, std::move(reply));
    return;
  }
  DTSIM_ASSERT(msg.info.tag == kModel, "ASGD worker expects models");
  const int node = msg.dst;
  Worker& w = workers_[static_cast<std::size_t>(node)];
  ctx.record_idle(node, ctx.now() - w.wait_start);
  w.pulled = msg.payload;
  w.out = ctx.new_buffer();
  ctx.start_gradient(node, msg.info.version);
}

void Asgd::eval_model(const Context&, std::span<float> out) const {
  as_vec(out) = w_;
}

} // namespace dtsim
