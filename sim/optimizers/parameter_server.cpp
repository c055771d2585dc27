// SPDX-License-Identifier: MIT
// Worker side and the server's FIFO service of the parameter-server methods.
#include "sim/optimizers/parameter_server.hpp"

#include "sim/core/errors.hpp"
#include "sim/engine/resident_vectors.hpp"

namespace dtsim {

ParameterServer::ParameterServer(const Params& p, const AlgorithmSetup& setup)
    : nodes_(setup.nodes), schedule_(p, setup, 0.05),
      lr_(static_cast<float>(schedule_.at_epoch(0))),
      weight_decay_(static_cast<float>(p.number("weight_decay", 0.0, Range::non_negative()))),
      w_(static_cast<Eigen::Index>(setup.num_params)), batch_size_(setup.batch_size),
      service_s_(p.child("server").number("update_s", 0.0, Range::seconds())),
      service_(SimTime::from_seconds(service_s_)), workers_(static_cast<std::size_t>(setup.nodes)) {
}

std::string ParameterServer::describe_server() const {
  return (service_s_ > 0 ? ", server update " + format_number(service_s_) + " s" : "") +
         schedule_.describe();
}

std::size_t ParameterServer::state_bytes() const {
  return static_cast<std::size_t>(w_.size()) * sizeof(float);
}

bool ParameterServer::attach_resident(ResidentVectors& vectors) {
  if (!has_resident_step())
    return false;
  vectors.set_local_update({}); // no local step: the server applies the gradient as it is
  resident_ = &vectors;
  w_ = Vec(); // the backend holds the server's vectors
  release_host_state();
  return true;
}

void ParameterServer::start(Context& ctx) {
  if (resident_)
    resident_->apply(VectorOp::copy, VectorRef::server_model(), VectorRef::model(0));
  else
    w_ = as_vec(ctx.params_view(0));
  on_start(ctx);
  for (int i = 0; i < ctx.num_nodes(); ++i) {
    workers_[static_cast<std::size_t>(i)].out = ctx.new_buffer();
    ctx.start_gradient(i, version_);
  }
}

void ParameterServer::before_gradient(int node, std::span<float> x) {
  Worker& w = workers_[static_cast<std::size_t>(node)];
  if (!w.pulled)
    return;
  if (resident_) // x = 1 * the pulled model: a mixing of one input, exact
    resident_->mix_into_model(node, w.pulled.id(), 1.0f, {}, {}, 0.0f);
  else
    as_vec(x) = as_vec(w.pulled.view());
}

void ParameterServer::after_gradient(int node, std::span<const float>, std::span<float> grad) {
  if (resident_) // the gradient stays in the node's row until served (the worker waits)
    return;
  as_vec(workers_[static_cast<std::size_t>(node)].out.data()) = as_vec(grad);
}

void ParameterServer::on_gradient(Context& ctx, int node, const GradientResult& r) {
  Worker& w = workers_[static_cast<std::size_t>(node)];
  w.pulled = SharedBuffer();
  w.wait_start = ctx.now();
  ctx.send(node, ctx.server(), MessageInfo{kGradient, r.tag, 0}, std::move(w.out));
  w.out = SharedBuffer();
}

void ParameterServer::on_message(Context& ctx, const Message& msg) {
  if (msg.dst == ctx.server()) {
    DTSIM_ASSERT(msg.info.tag == kGradient, "the server expects gradients");
    queue_.push_back(Pending{msg.src, msg.payload, msg.info.version, ctx.now(), false});
    serve(ctx);
    return;
  }
  DTSIM_ASSERT(msg.info.tag == kModel, "workers expect models");
  const int node = msg.dst;
  Worker& w = workers_[static_cast<std::size_t>(node)];
  ctx.record_idle(node, ctx.now() - w.wait_start);
  w.pulled = msg.payload;
  w.out = ctx.new_buffer();
  ctx.start_gradient(node, msg.info.version);
}

void ParameterServer::serve(Context& ctx) {
  while (!busy_) {
    auto it = queue_.begin();
    while (it != queue_.end() && !eligible(it->worker)) {
      it->held = true;
      ++it;
    }
    if (it == queue_.end())
      return;
    Pending p = std::move(*it);
    queue_.erase(it);
    Worker& w = workers_[static_cast<std::size_t>(p.worker)];
    w.server_wait_s += (ctx.now() - p.arrival).seconds();
    if (p.held)
      ++w.held_updates;
    if (service_s_ > 0) {
      busy_ = true;
      in_service_ = std::move(p);
      ctx.set_timer(ctx.server(), SimTime::from_seconds(service_s_), 0);
      return;
    }
    finish_service(ctx, p);
  }
}

void ParameterServer::on_timer(Context& ctx, int node, std::int32_t) {
  DTSIM_ASSERT(node == ctx.server() && busy_, "unexpected parameter-server timer");
  busy_ = false;
  Pending p = std::move(in_service_);
  finish_service(ctx, p);
  serve(ctx);
}

void ParameterServer::finish_service(Context& ctx, Pending& p) {
  serving_wait_ = ctx.now() - p.arrival - service_;
  serving_held_ = p.held;
  lr_ = static_cast<float>(
      schedule_.at_epoch(schedule_.global_epoch(static_cast<double>(served_) * batch_size_)));
  ++served_;
  apply(ctx, p.worker, p.g.view(), p.tau);
  p.g = SharedBuffer();
}

void ParameterServer::record_update(Context& ctx, int worker, std::int64_t staleness) {
  ctx.record_update(worker, staleness, serving_wait_, serving_held_);
}

void ParameterServer::reply(Context& ctx, int worker) {
  SharedBuffer b = ctx.new_buffer();
  if (resident_)
    resident_->apply(VectorOp::copy, VectorRef::message(b.id()), VectorRef::server_model());
  else
    as_vec(b.data()) = w_;
  ctx.send(ctx.server(), worker, MessageInfo{kModel, version_, 0}, std::move(b));
}

void ParameterServer::eval_model(const Context&, std::span<float> out) const {
  if (resident_)
    resident_->read(VectorRef::server_model(), out);
  else
    as_vec(out) = w_;
}

void ParameterServer::add_metrics(std::vector<std::pair<std::string, double>>& columns) const {
  columns.emplace_back("lr", static_cast<double>(lr_));
}

void ParameterServer::add_node_columns(
    std::vector<std::pair<std::string, std::vector<double>>>& c) const {
  std::vector<double> held, wait;
  for (const Worker& w : workers_) {
    held.push_back(w.held_updates);
    wait.push_back(w.server_wait_s);
  }
  c.emplace_back("held_updates", std::move(held));
  c.emplace_back("server_wait_s", std::move(wait));
}

} // namespace dtsim
