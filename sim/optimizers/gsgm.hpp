// SPDX-License-Identifier: MIT
// GSGM: gradient scheduling (white list), partly averaged gradients, global momentum.
#pragma once

#include "sim/optimizers/delay_compensation.hpp"
#include "sim/optimizers/parameter_server.hpp"

#include <memory>
#include <optional>
#include <vector>

namespace dtsim {

// A RECONSTRUCTION of GSGM (Li et al., arXiv:1902.07848; Wang et al., IEEE IoT-J 2022) from
// its abstracts, as specified in docs/algorithms.md, section 2 (the full text was not available):
// every mechanism is a switch, and with all three off the method is exactly ASGD.
//   schedule: the server serves worker k only while c[k] - min_l c[l] < slack (a white
//     list keeping accepted-update counts within `slack`); other gradients wait in the FIFO
//     and their workers wait for the reply.
//   average: the applied direction is the mean of the latest gradients G[j] of the workers
//     in A = {k} + {j : t - age[j] <= window} (average_by: window) or of the last `last`
//     distinct workers served (average_by: last); G is an n x d table.
//   global_momentum: M = momentum*M + gbar; w -= lr*M (off: w -= lr*gbar).
//   base: sgd | dc-asgd (the gradient is delay-compensated before it enters G; keys of the
//     compensation under `dc:`).
// Keys: ParameterServer's, schedule (true), slack (>= 1, default 1), average (true),
// average_by (window | last), window (>= 0, default n), last (>= 1, default 4),
// global_momentum (true), momentum ([0,1), 0.9), base (sgd), dc: {...}.
class Gsgm final : public ParameterServer {
public:
  Gsgm(const Params& p, const AlgorithmSetup& setup);
  std::string describe() const override;
  std::size_t state_bytes() const override;
  void add_metrics(std::vector<std::pair<std::string, double>>& columns) const override;

private:
  void on_start(Context& ctx) override;
  void apply(Context& ctx, int worker, std::span<const float> g, std::int64_t tau) override;
  bool eligible(int worker) const override;
  // Resident (ResidentVectors) with either compensation or none: the table, the sum, the
  // momentum, the mean and the adaptive compensation's mean square then live in the backend.
  bool has_resident_step() const override { return true; }
  void release_host_state() override;
  void step_host(int worker, std::span<const float> g, bool was_member);
  void step_resident(int worker, bool was_member);
  std::int64_t min_count() const;
  void update_members(int worker);
  void add_row(int j, bool add); // sum of A's rows +/-= G[j]

  bool schedule_;
  std::int64_t slack_;
  bool average_;
  bool average_by_window_;
  std::int64_t window_;
  std::size_t last_;
  bool global_momentum_;
  float momentum_;
  std::unique_ptr<DelayCompensation> dc_;
  std::size_t dim_;
  Eigen::MatrixXf table_;           // d x n: latest gradient of each worker (made at the start)
  std::vector<std::int64_t> age_;   // server version when G[j] was stored; -1 = never
  std::vector<std::int64_t> count_; // accepted updates per worker
  std::vector<int> recent_;         // distinct workers, most recent first
  std::vector<bool> member_;        // j in A at the last update
  int members_ = 0;                 // |A|
  Eigen::VectorXd sum_;             // sum of G[j] over A, kept up to date incrementally
  Vec m_;
  Vec avg_;
};

} // namespace dtsim
