// SPDX-License-Identifier: MIT
// D-PSGD vector math: the local step and the weighted mixing of either order.
#include "sim/optimizers/dsgd.hpp"

namespace dtsim {
namespace {

GossipProtocol::Options dsgd_options(const Params& p) {
  GossipProtocol::Options o;
  // Combine-then-adapt mixes x itself, so the node's own message is not needed then. (Only
  // a given key is looked at here: defaults are filled in later, in the usual key order.)
  o.keep_sent = !(p.has("order") && p.text("order", "") == "combine_then_adapt");
  return o;
}

} // namespace

Dsgd::Preset Dsgd::dsgdm() {
  Preset p;
  p.name = "dsgdm";
  p.update.momentum = 0.9;
  p.update.nesterov_key = false;
  return p;
}

Dsgd::Preset Dsgd::dsgdm_nesterov() {
  Preset p = dsgdm();
  p.name = "dsgdm-n";
  p.update.nesterov = true;
  return p;
}

Dsgd::Dsgd(const Params& p, const AlgorithmSetup& setup, const Preset& preset)
    : GossipProtocol(p, setup, dsgd_options(p)), name_(preset.name),
      adapt_then_combine_(
          p.choice("order", "adapt_then_combine", {"adapt_then_combine", "combine_then_adapt"}) ==
          "adapt_then_combine"),
      update_(p, setup.nodes, setup.num_params, preset.update) {
  if (!adapt_then_combine_)
    pending_u_ = NodeVectors(setup.nodes, setup.num_params);
}

std::string Dsgd::describe() const {
  return name_ + " (" + describe_protocol() + ", " +
         (adapt_then_combine_ ? "adapt_then_combine" : "combine_then_adapt") +
         (update_.momentum() > 0 ? ", momentum " + format_number(update_.momentum()) : "") +
         (update_.momentum() > 0 && update_.nesterov() ? " (nesterov)" : "") +
         lr_schedule().describe() + ")";
}

std::size_t Dsgd::state_bytes() const {
  return GossipProtocol::state_bytes() + update_.state_bytes() + pending_u_.bytes();
}

bool Dsgd::attach_resident(ResidentVectors& vectors) {
  ResidentVectors::LocalUpdateRule rule = update_.rule();
  rule.combine_then_adapt = !adapt_then_combine_;
  // The backend holds the momenta and u.
  set_resident(vectors, rule, {&pending_u_});
  update_.release_state();
  return true;
}

void Dsgd::local_step(int node, std::span<const float> x, std::span<float> grad) {
  if (resident()) { // the backend steps (combine-then-adapt: keeps u, sends x)
    resident()->local_step(node, outgoing_id(node), step_lr(node));
    return;
  }
  if (adapt_then_combine_) {
    update_.step(node, grad, x, step_lr(node), outgoing(node, 0));
  } else {
    update_.direction(node, grad, x, grad); // grad now holds u
    as_vec(outgoing(node, 0)) = as_vec(x);
    pending_u_[static_cast<std::size_t>(node)] = as_vec(grad);
  }
}

void Dsgd::combine(int node, std::span<float> x) {
  if (resident()) { // combine-then-adapt: the backend mixes x itself, then x -= lr u
    queue_mix(node, !adapt_then_combine_);
    return;
  }
  if (adapt_then_combine_) {
    mix(node, 0, sent(node, 0), x);
    return;
  }
  mix(node, 0, x, x);
  as_vec(x) -= mixed_lr(node) * pending_u_[static_cast<std::size_t>(node)];
}

} // namespace dtsim
