// SPDX-License-Identifier: MIT
// Hypercube, static exponential and edge-list graphs: structure and spectral gaps against
// closed forms (circulant / hypercube spectra), and edge-file errors.
#include "sim/core/errors.hpp"
#include "sim/core/params.hpp"
#include "support/config_error.hpp"
#include "support/params_helper.hpp"
#include "topologies/make_topology.hpp"

#include <Eigen/Eigenvalues>
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

// The spectral gap computed independently of topologies/: Metropolis weights rebuilt here from
// the neighbour lists, and the spectrum from Eigen's general (non-symmetric) eigensolver
// rather than the library's self-adjoint one.
double independent_gap(const Topology& t) {
  const int n = t.size();
  Eigen::MatrixXd w = Eigen::MatrixXd::Zero(n, n);
  for (int i = 0; i < n; ++i) {
    for (int j : t.neighbors(i)) {
      const auto deg_i = static_cast<double>(t.neighbors(i).size());
      const auto deg_j = static_cast<double>(t.neighbors(j).size());
      w(i, j) = 1.0 / (1.0 + std::max(deg_i, deg_j));
    }
    w(i, i) = 1.0 - w.row(i).sum();
  }
  Eigen::VectorXd moduli = Eigen::EigenSolver<Eigen::MatrixXd>(w, false).eigenvalues().cwiseAbs();
  std::sort(moduli.begin(), moduli.end());
  return 1.0 - moduli(n - 2);
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

  TEST_CASE("Social: the 32-node Davis Southern Women graph, its degrees and spectral gap") {
    const Topology t = make_topology(testing::make_params({{"kind", "social"}}), 32, 1);
    CHECK(t.num_edges() == 89);
    // Bipartite: women 0..17 link only to events 18..31.
    for (int i = 0; i < 32; ++i)
      for (int j : t.neighbors(i))
        CHECK((i < 18) != (j < 18));
    // Evelyn Jefferson attended 8 events; E8 (node 25) had 14 attendees, E9 12.
    CHECK(t.neighbors(0).size() == 8);
    CHECK(t.max_degree() == 14);
    CHECK(t.neighbors(25).size() == 14);
    CHECK(t.neighbors(26).size() == 12);
    CHECK(t.min_degree() == 2);
    // numpy.linalg.eigvalsh of the Metropolis matrix of networkx's graph: 0.0820975027.
    CHECK(t.spectral_gap() == doctest::Approx(0.0820975027).epsilon(1e-9));
    CHECK(t.spectral_gap() == doctest::Approx(independent_gap(t)).epsilon(1e-9));
    CHECK(testing::config_error_of([] {
            make_topology(testing::make_params({{"kind", "social"}}), 16, 1);
          }).find("set nodes: 32, got 16") != std::string::npos);
  }

  TEST_CASE("Hypercube-16 and social-32: library gap equals an independent eigen computation") {
    for (const char* kind : {"hypercube", "social"}) {
      const int n = std::string(kind) == "social" ? 32 : 16;
      const Topology t = make_topology(testing::make_params({{"kind", kind}}), n, 1);
      CAPTURE(kind);
      CHECK(t.spectral_gap() == doctest::Approx(independent_gap(t)).epsilon(1e-9));
    }
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
