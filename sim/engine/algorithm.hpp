// SPDX-License-Identifier: MIT
// Algorithm: a training protocol that reacts to simulator events through a Context.
#pragma once

#include "sim/core/sim_time.hpp"
#include "sim/engine/context.hpp"
#include "sim/engine/message.hpp"
#include "sim/engine/resident_vectors.hpp"

#include <cstdint>
#include <span>
#include <string>
#include <utility>
#include <vector>

namespace dtsim {

// A finished gradient (after after_gradient). `grad` is valid until the node starts its next
// gradient; it is empty when the algorithm does not read it (reads_gradient_after_task).
struct GradientResult {
  std::span<const float> grad;
  double loss = 0.0;    // mean minibatch loss at the snapshot
  std::int64_t tag = 0; // what start_gradient was given
  SimTime started;
};

// One object drives all nodes (and the server, if any). Every handler runs on the engine
// thread in event order, so an algorithm needs no locks; its state must depend only on the
// events it saw (no wall time, no thread ids) so that runs are reproducible.
class Algorithm {
public:
  virtual ~Algorithm() = default;
  virtual std::string describe() const = 0;
  // Called once at time 0; every node's params already hold the same initial model.
  virtual void start(Context& ctx) = 0;
  virtual void on_gradient(Context& ctx, int node, const GradientResult& result) = 0;
  virtual void on_message(Context& ctx, const Message& msg) = 0;
  virtual void on_timer(Context&, int /*node*/, std::int32_t /*tag*/) {}

  // Node-local math that runs inside node's gradient task, on a worker thread, in parallel
  // with other nodes (node-level parallelism for the vector work, not only the gradients).
  // Contract: each hook touches only `x`, `grad` and state private to `node` that the engine
  // thread leaves alone until on_gradient(node) (e.g. buffers whose handles the algorithm
  // set aside before start_gradient); it never calls the Context. Inputs are fixed when the
  // task starts, so results do not depend on timing or thread count.
  // before_gradient: at the gradient's start time; may rewrite the model (e.g. mixing).
  virtual void before_gradient(int /*node*/, std::span<float> /*x*/) {}
  // after_gradient: may rewrite the gradient in place (e.g. into the update direction) and
  // write node-private buffers; must not change x (the model changes at ready time).
  virtual void after_gradient(int /*node*/, std::span<const float> /*x*/,
                              std::span<float> /*grad*/) {}
  // Whether on_gradient reads GradientResult::grad. Algorithms that consume the gradient in
  // after_gradient say false: their gradients then live in per-thread scratch that stays in
  // cache, instead of one buffer per node.
  virtual bool reads_gradient_after_task() const { return true; }
  // A model kept as its inputs. Engine thread, just before node's gradient task starts:
  // true when that task's before_gradient will overwrite the whole model without reading
  // it, from inputs the algorithm then keeps until this is asked again for the node. The
  // engine may then run the task on a per-thread working copy and leave the node's stored
  // model stale, which spares the memory traffic of writing it (for D-PSGD on a large
  // model, two of the nine passes over memory per step); before anything reads the stored
  // model it calls rebuild_model, which writes the same bits from the kept inputs.
  virtual bool keep_model_inputs(int /*node*/) { return false; }
  virtual void rebuild_model(int /*node*/, std::span<float> /*x*/) const {}
  // Engine thread: the kept inputs are no longer needed (the stored model is current).
  virtual void release_model_inputs(int /*node*/) {}
  // Whether keep_model_inputs can ever say true (the engine then makes working copies).
  virtual bool can_keep_model_inputs() const { return false; }
  // Whether this algorithm can do its vector math on a resident backend's vectors; if so it
  // keeps the reference and from then on its hooks queue their math there (and ignore their
  // host spans, which are then empty or stale).
  virtual bool attach_resident(ResidentVectors& /*vectors*/) { return false; }
  // Whether attach_resident would accept (asked before the backend is made: a resident
  // device backend sets its memory aside only then).
  virtual bool can_attach_resident() const { return false; }
  // About how many vectors of P floats per node a resident backend keeps for it (model,
  // gradient, momentum, messages, rows of its own): what a device backend counts to refuse a
  // run that would not fit.
  virtual std::size_t resident_vectors_per_node() const { return 5; }
  // The model whose test accuracy is the run's headline: by default the average of the
  // node models; a parameter server returns its own model.
  virtual void eval_model(const Context& ctx, std::span<float> out) const;
  // False when node params are mere pulled copies (PS): no per-node accuracy or consensus.
  virtual bool has_node_models() const { return true; }
  // Bytes of algorithm state (buffers, momentum, tables), for the memory report.
  virtual std::size_t state_bytes() const = 0;
  // Extra columns for every /metrics row (same names every time), e.g. a scheduler's state.
  virtual void add_metrics(std::vector<std::pair<std::string, double>>& /*columns*/) const {}
  // Extra per-node columns for /nodes at the end of the run.
  virtual void
  add_node_columns(std::vector<std::pair<std::string, std::vector<double>>>& /*columns*/) const {}
};

} // namespace dtsim
