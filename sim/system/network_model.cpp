// SPDX-License-Identifier: MIT
// Sender-side (and optional receiver-side) FIFO links with per-link latency and bandwidth.
#include "sim/system/network_model.hpp"

#include "sim/core/text_rows.hpp"

#include <algorithm>
#include <cmath>

namespace dtsim {

NetworkModel::NetworkModel(const Params& p, int endpoints, std::uint64_t seed, int extra_endpoints)
    : endpoints_(endpoints), server_(endpoints - 1) {
  latency_s_ = p.number("latency_s", 0.001, Range::seconds());
  if (p.has("latency_matrix"))
    read_latency_matrix(p);
  jitter_s_ = p.number("jitter_s", 0.0, Range::seconds());
  bandwidth_ = p.number("bandwidth_Bps", 1e9, Range::positive());
  server_bandwidth_ = p.number("server_bandwidth_Bps", bandwidth_, Range::positive());
  receiver_queueing_ = p.flag("receiver_queueing", false);
  const int all = endpoints + extra_endpoints;
  out_free_at_.assign(static_cast<std::size_t>(all), SimTime());
  in_free_at_.assign(static_cast<std::size_t>(all), SimTime());
  for (int i = 0; i < all; ++i)
    rngs_.push_back(Rng::stream(seed, "network", static_cast<std::uint64_t>(i)));
}

void NetworkModel::read_latency_matrix(const Params& p) {
  const std::string path = p.file_path("latency_matrix");
  const auto rows = read_square_matrix(path, "latencies in seconds",
                                       [&](const std::string& m) { p.fail("latency_matrix", m); });
  const int nodes = endpoints_ - 1; // the last endpoint is the server
  const auto size = static_cast<int>(rows.size());
  if (size != nodes && size != endpoints_)
    p.fail("latency_matrix", path + ": expected " + std::to_string(nodes) + " rows (one per " +
                                 "node) or " + std::to_string(endpoints_) + " (server last), got " +
                                 std::to_string(size));
  matrix_size_ = size;
  for (const auto& row : rows)
    matrix_.insert(matrix_.end(), row.begin(), row.end());
}

double NetworkModel::latency(int src, int dst) const {
  if (src < matrix_size_ && dst < matrix_size_)
    return matrix_[static_cast<std::size_t>(src) * static_cast<std::size_t>(matrix_size_) +
                   static_cast<std::size_t>(dst)];
  return latency_s_;
}

double NetworkModel::link_bandwidth(int endpoint) const {
  return endpoint == server_ ? server_bandwidth_ : bandwidth_;
}

SimTime NetworkModel::send(int src, int dst, std::int64_t bytes, SimTime now) {
  const auto s = static_cast<std::size_t>(src);
  const auto b = static_cast<double>(bytes);
  const SimTime departure = std::max(now, out_free_at_[s]);
  out_free_at_[s] = departure + SimTime::from_seconds(b / link_bandwidth(src));
  double delay = latency(src, dst);
  if (jitter_s_ > 0)
    delay += rngs_[s].exponential(jitter_s_);
  SimTime arrival = out_free_at_[s] + SimTime::from_seconds(delay);
  if (receiver_queueing_) {
    // Cut-through: an idle receiver link adds nothing; a busy one delivers this message one
    // transmission time after the previous.
    auto& in_free = in_free_at_[static_cast<std::size_t>(dst)];
    arrival = std::max(arrival, in_free + SimTime::from_seconds(b / link_bandwidth(dst)));
    in_free = arrival;
  }
  return arrival;
}

} // namespace dtsim
