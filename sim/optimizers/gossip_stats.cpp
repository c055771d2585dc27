// SPDX-License-Identifier: MIT
// Running sums of the gossip figures.
#include "sim/optimizers/gossip_stats.hpp"

#include <cmath>

namespace dtsim {

GossipStats::GossipStats(int nodes, bool pairwise)
    : pairwise_(pairwise), node_failures_(static_cast<std::size_t>(nodes), 0.0),
      node_interactions_(static_cast<std::size_t>(nodes), 0.0) {}

void GossipStats::encoded(const EncodeStats& s) {
  const double err = std::sqrt(s.error_sq);
  error_sum_ += err;
  ++errors_;
  if (s.norm_sq > 0) {
    rel_error_sum_ += err / std::sqrt(s.norm_sq);
    ++rel_errors_;
  }
}

void GossipStats::encoded_sums(double error, std::int64_t count, double relative,
                               std::int64_t relative_count) const {
  error_sum_ += error;
  errors_ += count;
  rel_error_sum_ += relative;
  rel_errors_ += relative_count;
}

void GossipStats::sent(std::int64_t payload_bytes, std::size_t coordinates) {
  payload_bits_ += 8.0 * static_cast<double>(payload_bytes);
  coordinates_ += static_cast<double>(coordinates);
}

void GossipStats::decoded(int node, std::int64_t failures) {
  failures_ += failures;
  node_failures_[static_cast<std::size_t>(node)] += static_cast<double>(failures);
}

void GossipStats::decoded_counts(std::span<const std::int64_t> per_node) const {
  for (std::size_t i = 0; i < per_node.size(); ++i) {
    failures_ += per_node[i];
    node_failures_[i] += static_cast<double>(per_node[i]);
  }
}

void GossipStats::interaction(int initiator, int partner) {
  ++interactions_;
  node_interactions_[static_cast<std::size_t>(initiator)] += 1;
  node_interactions_[static_cast<std::size_t>(partner)] += 1;
}

void GossipStats::partner_staleness(double steps) {
  staleness_sum_ += steps;
  ++staleness_count_;
}

void GossipStats::add_metrics(std::vector<std::pair<std::string, double>>& c) const {
  const double nan = std::nan("");
  c.emplace_back("bits_per_coordinate", coordinates_ > 0 ? payload_bits_ / coordinates_ : nan);
  c.emplace_back("quantization_error",
                 errors_ > 0 ? error_sum_ / static_cast<double>(errors_) : nan);
  c.emplace_back("quantization_error_rel",
                 rel_errors_ > 0 ? rel_error_sum_ / static_cast<double>(rel_errors_) : nan);
  c.emplace_back("decode_failures", static_cast<double>(failures_));
  error_sum_ = rel_error_sum_ = 0;
  errors_ = rel_errors_ = 0;
  if (!pairwise_)
    return;
  c.emplace_back("interactions", static_cast<double>(interactions_));
  c.emplace_back("deadlocks_broken", static_cast<double>(deadlocks_));
  c.emplace_back("partner_staleness_mean",
                 staleness_count_ > 0 ? staleness_sum_ / static_cast<double>(staleness_count_)
                                      : nan);
  staleness_sum_ = 0;
  staleness_count_ = 0;
}

void GossipStats::add_node_columns(
    std::vector<std::pair<std::string, std::vector<double>>>& c) const {
  c.emplace_back("decode_failures", node_failures_);
  if (pairwise_)
    c.emplace_back("interactions", node_interactions_);
}

} // namespace dtsim
