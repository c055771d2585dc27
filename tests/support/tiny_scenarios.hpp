// SPDX-License-Identifier: MIT
// Small synthetic scenarios shared by the engine and optimizer tests.
#pragma once

#include <string>

namespace dtsim::testing {

// 8 nodes, a 4-class Gaussian mixture, softmax regression, lognormal compute with
// stragglers: small enough for a test, rich enough to exercise every event kind.
inline std::string tiny_scenario(const std::string& algorithm) {
  return R"(
name: tiny
seed: 3
nodes: 8
data:
  dataset: synthetic
  synthetic: {features: 16, classes: 4, train: 1600, test: 400}
  partition: {kind: dirichlet, alpha: 1.0, min_size: 20}
  batch_size: 16
model: {kind: softmax}
topology: {kind: ring}
algorithm: )" +
         algorithm + R"(
system:
  compute: {dist: lognormal, mean_s: 0.01, sigma: 0.5, stragglers: {fraction: 0.25, slowdown: 3}}
  network: {latency_s: 0.002, bandwidth_Bps: 1.0e6}
stop: {epochs: 3}
eval: {every_s: 0.05, per_node: true, per_node_samples: 200}
)";
}

} // namespace dtsim::testing
