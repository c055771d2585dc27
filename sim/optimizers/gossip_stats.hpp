// SPDX-License-Identifier: MIT
// Message and interaction figures of the gossip algorithms, for /metrics and /nodes.
#pragma once

#include "sim/optimizers/compression/compressor.hpp"

#include <cstdint>
#include <span>
#include <string>
#include <utility>
#include <vector>

namespace dtsim {

// Columns every /metrics row gets (same names in every row):
//   bits_per_coordinate     payload bits per coordinate over every message so far (the
//                           compressor's encoded size; the 64-byte envelope not counted)
//   quantization_error      mean ||Q(x) - x||_2 of the vectors encoded since the last row
//   quantization_error_rel  mean ||Q(x) - x|| / ||x|| of the same (vectors with x != 0)
//   decode_failures         coordinates decoded to a wrong value so far (lattice)
// and with `pairwise`:
//   interactions            pairwise averagings completed so far
//   deadlocks_broken        requests served at once because holding them would deadlock
//   partner_staleness_mean  mean, over the interactions since the last row, of the local
//                           steps the partner had taken that its model did not include yet
//                           (SwarmSGD's non-blocking partner; NaN where not recorded)
// Per node (/nodes): decode_failures, interactions (as initiator or partner).
// Engine thread only.
class GossipStats {
public:
  GossipStats(int nodes, bool pairwise);
  void encoded(const EncodeStats& s);
  // Figures of many encodings at once (a device's, ResidentVectors::take_encode_sums): sums
  // of ||Q(x) - x|| over `count` vectors and of ||Q(x) - x|| / ||x|| over `relative_count`.
  // Const as add_metrics: they join the since-the-last-row sums that it reads and restarts.
  void encoded_sums(double error, std::int64_t count, double relative,
                    std::int64_t relative_count) const;
  void sent(std::int64_t payload_bytes, std::size_t coordinates);
  void decoded(int node, std::int64_t failures);
  // A device's decoding failures per node (ResidentVectors::take_decode_failures); const as
  // encoded_sums.
  void decoded_counts(std::span<const std::int64_t> per_node) const;
  void interaction(int initiator, int partner);
  void partner_staleness(double steps);
  void deadlock_broken() { ++deadlocks_; }

  // Rows are taken once per evaluation: the "since the last row" sums restart here.
  void add_metrics(std::vector<std::pair<std::string, double>>& columns) const;
  void add_node_columns(std::vector<std::pair<std::string, std::vector<double>>>& columns) const;

private:
  bool pairwise_;
  double payload_bits_ = 0;
  double coordinates_ = 0;
  mutable std::int64_t failures_ = 0; // mutable: decoded_counts
  std::int64_t interactions_ = 0;
  std::int64_t deadlocks_ = 0;
  mutable std::vector<double> node_failures_;
  std::vector<double> node_interactions_;
  // Since the last row; add_metrics is const for the engine, these are its running sums.
  mutable double error_sum_ = 0, rel_error_sum_ = 0;
  mutable std::int64_t errors_ = 0, rel_errors_ = 0;
  mutable double staleness_sum_ = 0;
  mutable std::int64_t staleness_count_ = 0;
};

} // namespace dtsim
