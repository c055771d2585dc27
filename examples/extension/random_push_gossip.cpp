// SPDX-License-Identifier: MIT
#include "random_push_gossip.hpp"

#include "sim/optimizers/named_vectors.hpp"
#include "topologies/topology.hpp"

#include <vector>

namespace {

using namespace dtsim;
using Op = VectorOp;

class RandomPushGossip final : public Algorithm {
public:
  RandomPushGossip(const Params& p, const AlgorithmSetup& setup)
      : lr_(static_cast<float>(p.number("lr", 0.05, Range::positive()))),
        inbox_(static_cast<std::size_t>(setup.nodes)) {}

  std::string describe() const override {
    return "random-push gossip (example), lr " + format_number(lr_);
  }

  void start(Context& ctx) override {
    for (int i = 0; i < ctx.num_nodes(); ++i)
      ctx.start_gradient(i, 0);
  }

  // Every step names its vectors (named_vectors.hpp): on a resident backend (cpu-resident,
  // cuda-resident) they stay there and the steps are queued to it, else they run on the host
  // vectors; both run the same element-wise code (vector_ops.hpp).
  bool attach_resident(ResidentVectors& vectors) override {
    resident_ = &vectors;
    return true;
  }
  bool can_attach_resident() const override { return true; }

  void on_gradient(Context& ctx, int node, const GradientResult& result) override {
    const NamedVector x = model_vector(resident_, ctx, node);
    apply_named(resident_, Op::subtract_scaled, x, gradient_operand(resident_, node, result), {},
                lr_); // x -= lr g
    auto& received = inbox_[static_cast<std::size_t>(node)];
    if (!received.empty()) { // x = x / 2 + (0.5 / count) sum of the received models
      const float share = 0.5f / static_cast<float>(received.size());
      apply_named(resident_, Op::divide, x, {}, {}, 2.0f);
      for (const SharedBuffer& model : received)
        apply_named(resident_, Op::subtract_scaled, x, message_operand(resident_, model), {},
                    -share);
      received.clear(); // frees the buffers for reuse
    }
    ctx.record_update(node, -1);

    const std::span<const int> peers = ctx.topology().neighbors(node);
    const int peer = peers[ctx.rng(node).below(peers.size())];
    SharedBuffer copy = ctx.new_buffer();
    apply_named(resident_, Op::copy, message_vector(resident_, copy), x);
    ctx.send(node, peer, MessageInfo{}, std::move(copy));
    ctx.start_gradient(node, 0);
  }

  void on_message(Context&, const Message& msg) override {
    inbox_[static_cast<std::size_t>(msg.dst)].push_back(msg.payload);
  }

  std::size_t state_bytes() const override { return 0; } // the inboxes hold pooled buffers

private:
  float lr_;
  std::vector<std::vector<SharedBuffer>> inbox_;
  ResidentVectors* resident_ = nullptr;
};

} // namespace

std::unique_ptr<Algorithm> make_random_push_gossip(const Params& p, const AlgorithmSetup& setup) {
  return std::make_unique<RandomPushGossip>(p, setup);
}
