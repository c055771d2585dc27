// SPDX-License-Identifier: MIT
#include "random_push_gossip.hpp"

#include "topologies/topology.hpp"

#include <algorithm>
#include <vector>

namespace {

using namespace dtsim;

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

  void on_gradient(Context& ctx, int node, const GradientResult& result) override {
    const std::span<float> x = ctx.params(node);
    for (std::size_t k = 0; k < x.size(); ++k)
      x[k] -= lr_ * result.grad[k];
    auto& received = inbox_[static_cast<std::size_t>(node)];
    if (!received.empty()) {
      const float share = 0.5f / static_cast<float>(received.size());
      std::for_each(x.begin(), x.end(), [](float& v) { v *= 0.5f; });
      for (const SharedBuffer& model : received)
        for (std::size_t k = 0; k < x.size(); ++k)
          x[k] += share * model.view()[k];
      received.clear(); // frees the buffers for reuse
    }
    ctx.record_update(node, -1);

    const std::span<const int> peers = ctx.topology().neighbors(node);
    const int peer = peers[ctx.rng(node).below(peers.size())];
    SharedBuffer copy = ctx.new_buffer();
    std::copy(x.begin(), x.end(), copy.data().begin());
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
};

} // namespace

std::unique_ptr<Algorithm> make_random_push_gossip(const Params& p, const AlgorithmSetup& setup) {
  return std::make_unique<RandomPushGossip>(p, setup);
}
