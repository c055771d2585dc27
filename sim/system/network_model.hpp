// SPDX-License-Identifier: MIT
// Message delivery times: latency, bandwidth and queueing at the sender's (and receiver's) link.
#pragma once

#include "sim/core/params.hpp"
#include "sim/core/rng.hpp"
#include "sim/core/sim_time.hpp"

#include <cstdint>
#include <vector>

namespace dtsim {

// A message of b bytes sent at time t by s to d leaves when s's outgoing link is free
// (messages from one sender are serialised, FIFO), occupies it for b / bandwidth(s), and
// arrives latency(s, d) after it has left. With receiver_queueing, d's incoming link is a
// second FIFO (cut-through): messages that reach d together are delivered one
// b / bandwidth(d) apart, so n workers pushing to one server share its link.
// Endpoints are the nodes 0..n-1 and, last, the parameter server.
// Keys of `system.network` (all optional):
//   latency_s: one-way latency in seconds (>= 0, default 0.001)
//   latency_matrix: CSV file of n x n (or (n+1) x (n+1), server last) one-way latencies in
//                   seconds, row = sender; replaces latency_s for the links it covers
//   jitter_s: mean of an exponential extra latency per message (>= 0, default 0)
//   bandwidth_Bps: link bandwidth in bytes per second (> 0, default 1e9)
//   server_bandwidth_Bps: the server's links (default bandwidth_Bps)
//   receiver_queueing: false (default) | true
// Jitter draws come from the stream ("network", sender).
class NetworkModel {
public:
  // `endpoints` = nodes + 1, the last being the server (latency matrices are sized by it);
  // `extra_endpoints` more follow with the nodes' links and latency_s (e.g. a separate
  // coordinator of an example orderer).
  NetworkModel(const Params& network, int endpoints, std::uint64_t seed, int extra_endpoints = 0);

  // Arrival time at dst of a message sent now; updates the links' occupancy.
  SimTime send(int src, int dst, std::int64_t bytes, SimTime now);
  double bandwidth() const { return bandwidth_; }

private:
  void read_latency_matrix(const Params& p);
  double latency(int src, int dst) const;
  double link_bandwidth(int endpoint) const;

  int endpoints_ = 0; // nodes + server, without the extra ones
  int server_ = 0;
  double latency_s_ = 0.001;
  double jitter_s_ = 0.0;
  double bandwidth_ = 1e9;
  double server_bandwidth_ = 1e9;
  bool receiver_queueing_ = false;
  int matrix_size_ = 0;        // endpoints covered by latency_matrix_ (0 = none)
  std::vector<double> matrix_; // row-major, seconds
  std::vector<SimTime> out_free_at_;
  std::vector<SimTime> in_free_at_;
  std::vector<Rng> rngs_;
};

} // namespace dtsim
