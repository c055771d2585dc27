// SPDX-License-Identifier: MIT
// CdGrabOrder: coordinated distributed GraB, one running sum over all workers' pairs.
#pragma once

#include "sim/optimizers/ordering/balancers.hpp"
#include "sim/optimizers/ordering/epoch_orders.hpp"
#include "sim/optimizers/ordering/order_setup.hpp"

#include <Eigen/Core>
#include <cstdint>
#include <vector>

namespace dtsim {

// CD-GraB (Cooper et al., arXiv:2302.00845; docs/algorithms.md, section 7) as real traffic. Each
// worker pairs consecutive examples of its own order (a pair may straddle two of its steps);
// in its gradient task it forms the pair differences dlt = g(second) - g(first), and after
// its gradient-ready event sends them to the coordinator (endpoint n, the parameter server's
// endpoint): 64 + 4 d bytes per pair. When the coordinator holds every worker's step-k
// differences it balances them with one shared running sum, pair p of worker 0..n-1 then
// pair p+1, ..., taking `server_s_per_pair` simulated seconds per pair (steps are served one
// at a time, in order), and returns each worker its signs (64 + ceil(pairs / 8) bytes).
// A worker places each pair at the front/back of its own next order as the signs arrive;
// it cannot start its next epoch before all its signs are in: the engine defers that
// gradient (idle time, /nodes/order_wait_s). The odd example of an odd-sized epoch takes
// the middle slot. Equal-sized workers reproduce the paper's shared front/back pointers.
// Keys: server_s_per_pair (>= 0; default 1.2e-9 x num_params: a dot product and an update
// over d floats at ~10 GB/s).
// The sign convention (second - first) is the spec's; the reference code uses
// first - second, which flips s and dlt together and gives the same decisions.
class CdGrabOrder final : public ExampleOrder {
public:
  CdGrabOrder(const Params& p, const OrderSetup& setup);
  std::string describe() const override;
  bool separate_coordinator() const override { return separate_; }
  bool needs_per_example_grads() const override { return true; }
  int next_batch(OrderChannel& channel, int node, std::span<std::uint32_t> out) override;
  void observe(int node, std::span<const std::uint32_t> ids,
               std::span<const float> per_example) override;
  void on_gradient_ready(OrderChannel& channel, int node) override;
  void on_message(OrderChannel& channel, const OrderMessage& msg) override;
  void on_timer(OrderChannel& channel, int endpoint, std::int64_t tag) override;
  std::span<const std::uint32_t> epoch_order(int node, std::int64_t epoch) const override;
  std::size_t state_bytes() const override;
  void add_metrics(std::vector<std::pair<std::string, double>>& columns) const override;
  void add_node_columns(
      std::vector<std::pair<std::string, std::vector<double>>>& columns) const override;

  static constexpr std::int64_t kDifferences = 1; // worker -> coordinator
  static constexpr std::int64_t kSigns = 2;       // coordinator -> worker
  static constexpr std::int64_t kHeaderBytes = 64;

private:
  // One step of one worker: its pairs, their differences and (later) their signs.
  struct StepRecord {
    std::int64_t step = 0;
    int num_pairs = 0;
    std::vector<std::uint32_t> first, second; // example ids per pair
    std::vector<int> first_col;               // column of the first in the batch; -1: cached
    std::vector<int> second_col;
    int carry_col = -1;      // an unpaired last example whose gradient the task caches
    bool ends_epoch = false; // the worker's last batch of its local epoch
    Eigen::MatrixXf diffs;   // d x max pairs
    std::vector<char> signs; // 1: first to the front
  };
  struct Worker {
    explicit Worker(std::vector<std::uint32_t> first);
    EpochOrders orders;
    std::vector<StepRecord> ring; // steps drawn but not yet answered, oldest at head
    std::size_t head = 0;
    std::size_t count = 0;
    StepRecord* task_record = nullptr; // the record the running task fills
    Vec cached;                        // gradient of a pair's first example, across steps
    std::uint32_t cached_id = 0;
    bool has_cached = false;
    std::int64_t steps_drawn = 0;
    std::int64_t steps_sent = 0;
    bool waiting = false;
    SimTime wait_since;
    double wait_s = 0;
    double bytes_sent = 0;
  };

  StepRecord& record(Worker& w, std::int64_t step);
  StepRecord& push_record(Worker& w);
  void try_serve(OrderChannel& channel);
  SimTime service_time(std::int64_t step);

  std::size_t dim_;
  int nodes_;
  int max_pairs_;
  double server_s_per_pair_;
  bool separate_; // coordinator on its own machine, not the parameter server's
  std::vector<Worker> workers_;
  // Coordinator.
  PairBalancer server_;
  std::int64_t next_step_ = 0; // lowest step not yet balanced
  std::vector<int> arrivals_;  // [k - next_step_]: workers whose step k has arrived
  bool busy_ = false;
  double server_busy_s_ = 0;
  std::int64_t pairs_balanced_ = 0;
};

} // namespace dtsim
