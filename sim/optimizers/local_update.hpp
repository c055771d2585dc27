// SPDX-License-Identifier: MIT
// The per-node update direction u from a gradient: weight decay and (Nesterov) momentum.
#pragma once

#include "sim/core/flat_vector.hpp"
#include "sim/core/params.hpp"
#include "sim/engine/resident_vectors.hpp"
#include "sim/optimizers/node_vectors.hpp"

#include <span>
#include <vector>

namespace dtsim {

// u = g + wd*x; with momentum beta: m = beta*m + u, then u = m (heavy ball) or
// u = u + beta*m (Nesterov, PyTorch form). One momentum buffer per node, never sent.
// Keys: momentum (in [0,1), default 0), nesterov (default false), weight_decay (>= 0, 0).
class LocalUpdate {
public:
  // How a preset reads the keys: other momentum default, a fixed Nesterov choice (the key
  // `nesterov` is then not read, so giving it is an error), or no weight decay key (a method
  // that applies weight decay itself).
  struct Options {
    double momentum = 0;
    bool nesterov = false;
    bool nesterov_key = true;
    bool weight_decay_key = true;
  };
  LocalUpdate(const Params& p, int nodes, std::size_t dim)
      : LocalUpdate(p, nodes, dim, Options{}) {}
  LocalUpdate(const Params& p, int nodes, std::size_t dim, const Options& options);
  // Writes u for node i into `out` (size dim; may be `grad` itself); x is the node's model
  // at the gradient. Updates the node's momentum.
  void direction(int node, std::span<const float> grad, std::span<const float> x,
                 std::span<float> out);
  // direction()'s math on caller-owned vectors (m empty when rule.momentum is 0), which a
  // resident backend on the host runs too (same bits).
  static void direction(const ResidentVectors::LocalUpdateRule& rule, std::span<const float> grad,
                        std::span<const float> x, std::span<float> m, std::span<float> out);
  // out = x - lr*u in one pass over memory (blocks stay in L1), updating the momentum: the
  // local step of adapt-then-combine methods.
  void step(int node, std::span<const float> grad, std::span<const float> x, float lr,
            std::span<float> out);
  // Node i's momentum buffer (empty without momentum), for a method that runs direction()'s
  // static form with its own steps around it.
  std::span<float> momentum_of(int node) {
    return beta_ > 0 ? m_.span(static_cast<std::size_t>(node)) : std::span<float>();
  }
  // Drops the momentum buffers, for a method whose resident backend holds the momenta
  // (attach_resident): the node-indexed direction() and step() may not be called after it.
  void release_state() { m_.release(); }
  std::size_t state_bytes() const;
  double momentum() const { return beta_text_; }
  bool nesterov() const { return nesterov_; }
  ResidentVectors::LocalUpdateRule rule() const { return {beta_, weight_decay_, nesterov_}; }
  // step()'s math on caller-owned vectors (m may be empty when rule.momentum is 0; with
  // rule.quasi_global it is only read): the one
  // definition that a resident backend on the host runs too, so that its results are the
  // same bits.
  static void step(const ResidentVectors::LocalUpdateRule& rule, std::span<const float> grad,
                   std::span<const float> x, float lr, std::span<float> m, std::span<float> out);

private:
  float beta_ = 0;
  double beta_text_ = 0; // as configured, for describe()
  float weight_decay_ = 0;
  bool nesterov_ = false;
  NodeVectors m_; // made on each node's first step
};

} // namespace dtsim
