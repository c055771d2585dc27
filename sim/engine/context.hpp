// SPDX-License-Identifier: MIT
// Context: the narrow interface through which an algorithm acts on the simulation.
#pragma once

#include "sim/core/rng.hpp"
#include "sim/core/sim_time.hpp"
#include "sim/engine/message.hpp"

#include <cstdint>
#include <span>

namespace dtsim {

class Topology;

// Everything an algorithm may do. It never sees the event queue, YAML or HDF5: it asks for
// gradients, messages and timers, and the engine schedules them.
//
// Node models: node i's parameters live in the engine (all nodes contiguous). While node i
// computes a gradient, the engine reads params(i) from a worker thread, so params(i) is
// writable only when !computing(i) (checked) — algorithms update a node between its
// gradients, which is also what a real worker does.
class Context {
public:
  virtual ~Context() = default;

  virtual SimTime now() const = 0;
  virtual int num_nodes() const = 0;
  virtual std::size_t num_params() const = 0;
  virtual const Topology& topology() const = 0;
  // The parameter-server endpoint for send() (PS algorithms only).
  int server() const { return num_nodes(); }

  virtual std::span<float> params(int node) = 0; // requires !computing(node)
  virtual std::span<const float> params_view(int node) const = 0;
  // The one model every node holds, while they all still hold the model the run started from
  // (an algorithm's start, before it writes a model or starts a gradient): state built from
  // the initial models once instead of n times, and on a resident backend without bringing
  // the n models to the host. Empty where the nodes may differ, or the engine cannot say.
  virtual std::span<const float> common_model() const { return {}; }
  virtual bool computing(int node) const = 0;
  // The average of the node models, summed in node order (the default evaluation model);
  // an engine whose backend keeps the models computes it there, with the same bits.
  virtual void mean_of_models(std::span<float> out) const;

  // Starts node's next minibatch gradient at params(node); the engine draws the minibatch
  // and the compute time now and calls Algorithm::on_gradient when it is ready.
  // requires !computing(node). `tag` comes back in the result (e.g. the model version).
  virtual void start_gradient(int node, std::int64_t tag) = 0;

  // A buffer of num_params() floats to fill and send; contents unspecified.
  virtual SharedBuffer new_buffer() = 0;
  // Sends payload from src to dst (nodes 0..n-1 or server()). wire_bytes < 0 means dense
  // float32 plus a header; compressors pass their encoded size.
  virtual void send(int src, int dst, const MessageInfo& info, SharedBuffer payload,
                    std::int64_t wire_bytes = -1) = 0;
  virtual void set_timer(int node, SimTime delay, std::int32_t tag) = 0;

  // The algorithm's own random stream for a node (server: node = server()).
  virtual Rng& rng(int node) = 0;
  // Records one applied model update by `node` with its staleness (>= 0), or -1 if the
  // notion does not apply. Feeds the `updates` count, the staleness histogram and (with
  // output.events: full) an update record with how long the update waited at a server and
  // whether a scheduler held it.
  virtual void record_update(int node, std::int64_t staleness, SimTime waited = SimTime(),
                             bool held = false) = 0;
  // Records time a node spent blocked (waiting for messages), for /nodes/idle_s.
  virtual void record_idle(int node, SimTime waited) = 0;
};

} // namespace dtsim
