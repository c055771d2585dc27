// SPDX-License-Identifier: MIT
// CHOCO-SGD: gossip on compressed differences with public estimates (Koloskova et al.).
#pragma once

#include "sim/optimizers/compression/compressor.hpp"
#include "sim/optimizers/gossip_protocol.hpp"
#include "sim/optimizers/gossip_stats.hpp"
#include "sim/optimizers/local_update.hpp"

#include <memory>
#include <vector>

namespace dtsim {

// docs/algorithms.md, section 5, with the memory-efficient state of the authors' code: per node
// x_i, its public estimate xhat_i and s_i = sum_j W_ij xhat_j (j includes i): three vectors
// whatever the degree. Each round, in the node's gradient task:
//   adapt_then_combine (paper order, default):
//     x_half = x_i - lr*u;  q_i = C(x_half - xhat_i);  xhat_i += q_i;  s_i += W_ii q_i
//     [send q_i; receive every neighbour's q_j]  s_i += sum_j W_ij q_j
//     x_i = x_half + gamma * (s_i - xhat_i)
//   combine_then_adapt (the code's order):
//     x_next = x_i - lr*u + gamma * (s_i - xhat_i);  q_i = C(x_next - xhat_i); xhat_i += q_i;
//     s_i += W_ii q_i;  [exchange]  s_i += sum_j W_ij q_j;  x_i = x_next
// Rounds are GossipProtocol's synchronous rounds (a node starts its next gradient once it
// has every neighbour's q of the round), so with gamma = 1 and compressor none each order is
// dsgd's same order; the result equals dsgd's up to float32 rounding (xhat + (x - xhat) is
// not always x in floating point), with the same events and bytes (a test).
// The estimates start at the initial models, known to all (the paper starts them at 0).
// The compressor must be contractive: qsgd and randomk default to their contractive form
// here; error feedback is built in (what q_i leaves out stays in x_i - xhat_i), so the
// compressor takes no error_feedback key, and the lattice quantizer (no reference point for
// differences) is refused.
// Sync rounds on a static graph only: s_i must receive every q_j exactly once, with the
// fixed weights it was built with (mode: async and time-varying topologies are refused).
// Keys: GossipProtocol's (lr, lr_schedule, mode: sync), gamma (consensus step in (0, 1],
// default 0.5), order, compressor (map, default {kind: qsgd}), and LocalUpdate's momentum,
// nesterov, weight_decay.
class ChocoSgd final : public GossipProtocol, private ResidentEncoder {
public:
  ChocoSgd(const Params& p, const AlgorithmSetup& setup);
  std::string describe() const override;
  std::size_t state_bytes() const override;

  // On a resident backend: x_half, xhat and s stay there (ResidentVectors' choco rule), the
  // messages q too; the node's compressor and stream stay here and encode inside the
  // backend's local step (cpu-resident), or the device runs its own form of it
  // (cuda-resident; every built-in compressor that CHOCO-SGD takes has one).
  bool attach_resident(ResidentVectors& vectors) override;
  bool can_attach_resident() const override;
  // Model, gradient (the difference, then the mixed q), momentum, x_half, xhat, s and about
  // two messages.
  std::size_t resident_vectors_per_node() const override { return 8; }

  // The step's math around the compression, on caller-owned vectors: the one definition
  // that the host path and a resident backend on the host run, so that both give the same
  // bits. After LocalUpdate's step wrote x_half: with combine_then_adapt,
  // x_half += gamma (s - xhat); then diff = x_half - xhat.
  static void difference(bool adapt_then_combine, float gamma, std::span<float> x_half,
                         std::span<const float> xhat, std::span<const float> s,
                         std::span<float> diff);
  // After the encoding q = C(diff): xhat += q.
  static void estimate(std::span<float> xhat, std::span<const float> q);
  // The mixing's end, mixed = W_ii q_i + sum_j W_ij q_j: s += mixed; then
  // x = x_half + gamma (s - xhat) (adapt-then-combine) or x = x_half.
  static void consensus(bool adapt_then_combine, float gamma, std::span<const float> mixed,
                        std::span<float> s, std::span<const float> x_half,
                        std::span<const float> xhat, std::span<float> x);
  void add_metrics(std::vector<std::pair<std::string, double>>& columns) const override;
  void add_node_columns(
      std::vector<std::pair<std::string, std::vector<double>>>& columns) const override;

private:
  struct NodeState {
    Vec x_half; // adapt_then_combine: x - lr*u; otherwise x_next
    Vec xhat;
    Vec s;
    Vec scratch; // the difference that is compressed; then the round's weighted sum of q
    std::unique_ptr<Compressor> compressor;
    Rng rng{0}; // the node's compressor stream, used only inside its tasks
    EncodeStats last;
    bool encoded = false; // `last` is of the message about to go out (host encodings only)
  };

  void prepare(Context& ctx) override;
  // The initial estimate and s of the nodes of `group`, which share their weights (their
  // first node's, from `common`, the one model all hold, or else from each model).
  void initial_sums(std::span<const int> group, const Context& ctx, std::span<const float> common);
  void encode(int node, std::span<const float> x, std::span<float> wire) override;
  // The device's form of the nodes' compressor (kind none: it has none).
  ResidentCompression device_compression() const;
  void local_step(int node, std::span<const float> x, std::span<float> grad) override;
  void combine(int node, std::span<float> x) override;
  std::int64_t message_bytes(int node) override;

  const Topology& topology_;
  float gamma_;
  bool adapt_then_combine_;
  LocalUpdate update_;
  std::vector<NodeState> nodes_;
  std::vector<std::uint64_t> device_seeds_; // resident: each node's device stream
  GossipStats stats_;
};

} // namespace dtsim
