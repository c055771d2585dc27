// SPDX-License-Identifier: MIT
// NetworkModel: latency, bandwidth and FIFO queueing at the sender.
#include "sim/system/network_model.hpp"
#include "support/params_helper.hpp"

#include <doctest/doctest.h>
#include <filesystem>
#include <fstream>
#include <unistd.h>

using namespace dtsim;
using testing::make_params;

TEST_SUITE("system") {
  TEST_CASE("NetworkModel: a busy sender queues its own messages") {
    NetworkModel net(make_params({{"latency_s", "0.01"}, {"bandwidth_Bps", "1000"}}), 3, 1);
    const SimTime t0 = SimTime::from_seconds(1.0);
    // 500 bytes at 1000 B/s = 0.5 s on the link, then 0.01 s latency.
    CHECK(net.send(0, 2, 500, t0) == SimTime::from_seconds(1.51));
    // The second message waits for the first to leave the link.
    CHECK(net.send(0, 2, 500, t0) == SimTime::from_seconds(2.01));
    // Another sender's link is free.
    CHECK(net.send(1, 2, 500, t0) == SimTime::from_seconds(1.51));
    // After the link drains, no queueing.
    CHECK(net.send(0, 2, 100, SimTime::from_seconds(5.0)) == SimTime::from_seconds(5.11));
  }

  TEST_CASE("NetworkModel: receiver queueing serialises messages that reach one endpoint") {
    NetworkModel net(make_params({{"latency_s", "0.01"},
                                  {"bandwidth_Bps", "1000"},
                                  {"server_bandwidth_Bps", "500"},
                                  {"receiver_queueing", "true"}}),
                     4, 1); // nodes 0..2, server 3
    const SimTime t0 = SimTime::from_seconds(1.0);
    // Two workers push 100 bytes to the server at once: both uplinks are free (0.1 s each),
    // the server's downlink (500 B/s) takes 0.2 s per message.
    CHECK(net.send(0, 3, 100, t0) == SimTime::from_seconds(1.11));
    CHECK(net.send(1, 3, 100, t0) == SimTime::from_seconds(1.31));
    // A node's own link is unaffected; the server's replies leave at 500 B/s.
    CHECK(net.send(2, 0, 100, t0) == SimTime::from_seconds(1.11));
    CHECK(net.send(3, 2, 100, t0) == SimTime::from_seconds(1.21));
  }

  TEST_CASE("NetworkModel: a latency matrix sets each link's latency, with clear errors") {
    const auto path = std::filesystem::temp_directory_path() /
                      ("dtsim_latency_" + std::to_string(getpid()) + ".csv");
    std::ofstream(path) << "# row = sender\n0, 0.1, 0.2\n0.1, 0, 0.3\n0.2, 0.3, 0\n";
    NetworkModel net(make_params({{"latency_matrix", path.string()}, {"bandwidth_Bps", "1e12"}}), 4,
                     1);
    const SimTime t0 = SimTime::from_seconds(1.0);
    CHECK(net.send(0, 2, 0, t0) == SimTime::from_seconds(1.2));
    CHECK(net.send(1, 2, 0, t0) == SimTime::from_seconds(1.3));
    CHECK(net.send(2, 3, 0, t0) == SimTime::from_seconds(1.001)); // server: latency_s
    std::ofstream(path) << "0, 0.1\n0.1, 0\n";
    CHECK_THROWS_WITH(NetworkModel(make_params({{"latency_matrix", path.string()}}), 4, 1),
                      ("test.yaml:2: latency_matrix: " + path.string() +
                       ": expected 3 rows (one per node) or 4 (server last), got 2")
                          .c_str());
    std::ofstream(path) << "0, x\n1, 0\n";
    CHECK_THROWS_WITH(NetworkModel(make_params({{"latency_matrix", path.string()}}), 3, 1),
                      ("test.yaml:2: latency_matrix: " + path.string() +
                       ":1: expected latencies in seconds >= 0, got 'x'")
                          .c_str());
  }
}
