// SPDX-License-Identifier: MIT
// NetworkModel: latency, bandwidth and FIFO queueing at the sender.
#include "sim/system/network_model.hpp"
#include "support/params_helper.hpp"

#include <doctest/doctest.h>

using namespace dtsim;
using testing::make_params;

TEST_SUITE("system") {
  TEST_CASE("NetworkModel: a busy sender queues its own messages") {
    NetworkModel net(make_params({{"latency_s", "0.01"}, {"bandwidth_Bps", "1000"}}), 3, 1);
    const SimTime t0 = SimTime::from_seconds(1.0);
    // 500 bytes at 1000 B/s = 0.5 s on the link, then 0.01 s latency.
    CHECK(net.send(0, 500, t0) == SimTime::from_seconds(1.51));
    // The second message waits for the first to leave the link.
    CHECK(net.send(0, 500, t0) == SimTime::from_seconds(2.01));
    // Another sender's link is free.
    CHECK(net.send(1, 500, t0) == SimTime::from_seconds(1.51));
    // After the link drains, no queueing.
    CHECK(net.send(0, 100, SimTime::from_seconds(5.0)) == SimTime::from_seconds(5.11));
  }
}
