// SPDX-License-Identifier: MIT
// The engine's run settings (stop rule, evaluation, batch), filled in by sim/scenario.
#pragma once

#include <atomic>
#include <cstdint>
#include <functional>
#include <string>

namespace dtsim {

// Progress of a running simulation, for a terminal display.
struct Progress {
  double sim_time_s = 0;
  double epoch = 0;
  std::int64_t updates = 0;
  double test_accuracy = -1; // last evaluation, -1 before the first
  double train_loss = -1;    // mean minibatch loss between the last two evaluations, -1 before
  double fraction_done = 0;  // of the stop rule, in [0, 1]
  double wall_seconds = 0;
};

struct EngineConfig {
  std::uint64_t seed = 1;
  int batch_size = 32;
  // Stop rule: whichever comes first among those that are > 0.
  double stop_epochs = 0; // passes over the training set, summed over nodes
  double stop_sim_time_s = 0;
  std::int64_t stop_steps = 0;  // gradient steps per node (total >= steps * nodes)
  double divergence_loss = 1e3; // a minibatch loss above this (or NaN/Inf) = diverged
  // Evaluation: exactly one rule is > 0. Progress rules (epochs, updates) give every node
  // count the same number of evaluations per epoch; a time rule gives larger n fewer.
  double eval_every_s = 0;             // simulated seconds between evaluations
  double eval_every_epochs = 0.05;     // fraction of a pass over the whole training set
  std::int64_t eval_every_updates = 0; // updates (all nodes together) between evaluations
  std::int64_t eval_test_samples = 0;  // 0 = whole test split
  bool eval_per_node = false;
  std::int64_t eval_per_node_samples = 1000;
  // One /epochs row each time the nodes together complete a pass over the training set:
  // test loss/accuracy, full training loss on each node's data, and optionally the
  // parallel herding bound (a per-example gradient pass over the training set).
  bool eval_per_epoch = false;
  bool eval_herding_bound = false;
  bool record_events = false;
  // Per-node tasks of algorithms that can rebuild a model from kept inputs run on per-thread
  // working copies (Algorithm::keep_model_inputs). Traces are the same bits either way;
  // false is for tests that show it.
  bool working_copies = true;
  std::atomic<bool>* interrupt = nullptr;           // set from a signal handler
  std::function<void(const Progress&)> on_progress; // wall-clock paced, display only
};

} // namespace dtsim
