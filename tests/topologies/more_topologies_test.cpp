// SPDX-License-Identifier: MIT
// Hypercube, static exponential and edge-list graphs: structure and spectral gaps against
// closed forms (circulant / hypercube spectra), and edge-file errors.
#include "sim/core/errors.hpp"
#include "sim/core/params.hpp"
#include "support/config_error.hpp"
#include "support/params_helper.hpp"
#include "topologies/make_topology.hpp"

#include <algorithm>
#include <cmath>
#include <doctest/doctest.h>
#include <filesystem>
#include <fstream>
#include <numbers>
#include <unistd.h>

using namespace dtsim;

namespace {

std::string edge_file(const std::string& text) {
  const auto path =
      std::filesystem::temp_directory_path() / ("dtsim_edges_" + std::to_string(getpid()) + ".txt");
  std::ofstream(path) << text;
  return path.string();
}

} // namespace

TEST_SUITE("topologies") {
  TEST_CASE("Hypercube: 16 nodes, degree 4, diameter 4, gap 0.4 from the spectrum (1+d-2k)/(d+1)") {
    const Topology t = make_topology(testing::make_params({{"kind", "hypercube"}}), 16, 1);
    CHECK(t.min_degree() == 4);
    CHECK(t.max_degree() == 4);
    CHECK(t.diameter() == 4);
    // Eigenvalues of W = (I + A)/5 on Q_4: (1 + 4 - 2k)/5, k = 0..4 -> 1, .6, .2, -.2, -.6.
    CHECK(t.spectral_gap() == doctest::Approx(1.0 - 0.6).epsilon(1e-12));
    CHECK(testing::config_error_of([] {
            make_topology(testing::make_params({{"kind", "hypercube"}}), 12, 1);
          }).find("power-of-two number of nodes, got 12") != std::string::npos);
  }

  TEST_CASE("Exponential: neighbours at distance 2^k and the circulant spectrum") {
    const int n = 16;
    const Topology t =
        make_topology(testing::make_params({{"kind", "exponential"}, {"mixing", "uniform"}}), n, 1);
    // Hops +-1, +-2, +-4 and 8 (= -8): degree 7.
    CHECK(t.min_degree() == 7);
    CHECK(t.max_degree() == 7);
    const auto nb = t.neighbors(0);
    CHECK(std::vector<int>(nb.begin(), nb.end()) == std::vector<int>{1, 2, 4, 8, 12, 14, 15});
    // W is circulant: lambda_k = (1 + sum over the 7 offsets of cos(2 pi k h / n)) / 8.
    double second = 0;
    for (int k = 1; k < n; ++k) {
      double lambda = 1;
      for (int h : {1, 2, 4, 8, 12, 14, 15})
        lambda += std::cos(2 * std::numbers::pi * k * h / n);
      second = std::max(second, std::fabs(lambda / 8));
    }
    CHECK(t.spectral_gap() == doctest::Approx(1 - second).epsilon(1e-12));
  }

  TEST_CASE("Edge-list file: comments, duplicates and reversed pairs, and errors with file:line") {
    const std::string ok = edge_file("# a 4-cycle\n0 1\n1 2  # second edge\n\n2 3\n3 0\n1 0\n");
    const Topology t = make_topology(testing::make_params({{"kind", "edges"}, {"file", ok}}), 4, 1);
    CHECK(t.num_edges() == 4);
    CHECK(t.diameter() == 2);
    CHECK(t.spectral_gap() == doctest::Approx(1 - 1.0 / 3)); // ring of 4: (1 + 2cos)/3
    const std::string bad = edge_file("0 1\n1 x\n");
    CHECK(testing::config_error_of([&] {
            make_topology(testing::make_params({{"kind", "edges"}, {"file", bad}}), 4, 1);
          }).find(bad + ":2: expected two node ids") != std::string::npos);
    const std::string range = edge_file("0 1\n1 9\n");
    CHECK(testing::config_error_of([&] {
            make_topology(testing::make_params({{"kind", "edges"}, {"file", range}}), 4, 1);
          }).find(":2: node id out of range [0, 3]") != std::string::npos);
    const std::string loop = edge_file("0 0\n");
    CHECK(testing::config_error_of([&] {
            make_topology(testing::make_params({{"kind", "edges"}, {"file", loop}}), 2, 1);
          }).find("self-loop") != std::string::npos);
    const std::string split = edge_file("0 1\n2 3\n");
    CHECK(testing::config_error_of([&] {
            make_topology(testing::make_params({{"kind", "edges"}, {"file", split}}), 4, 1);
          }).find("disconnected (2 components)") != std::string::npos);
    CHECK(
        testing::config_error_of([&] {
          make_topology(testing::make_params({{"kind", "edges"}, {"file", "/nonexistent"}}), 4, 1);
        }).find("cannot open edge-list file /nonexistent") != std::string::npos);
  }
}
