// SPDX-License-Identifier: MIT
// mixing_spectrum: Lanczos on the sparse W against every eigenvalue of the dense W and
// against closed forms, including a spectrum whose smallest eigenvalue is positive.
#include "topologies/spectrum.hpp"

#include <cmath>
#include <doctest/doctest.h>
#include <numbers>
#include <random>
#include <set>

using namespace dtsim;

namespace {

// Metropolis-Hastings weights W_ij = 1 / (1 + max(d_i, d_j)) on an undirected edge set.
struct Graph {
  std::vector<std::vector<int>> neighbors;
  std::vector<std::vector<double>> weights;
  std::vector<double> self;
};

Graph metropolis(int n, const std::set<std::pair<int, int>>& edges) {
  Graph g;
  g.neighbors.resize(static_cast<std::size_t>(n));
  for (const auto& [a, b] : edges) {
    g.neighbors[static_cast<std::size_t>(a)].push_back(b);
    g.neighbors[static_cast<std::size_t>(b)].push_back(a);
  }
  g.weights.resize(g.neighbors.size());
  g.self.assign(g.neighbors.size(), 1.0);
  for (std::size_t i = 0; i < g.neighbors.size(); ++i)
    for (int j : g.neighbors[i]) {
      const double w =
          1.0 /
          (1.0 + static_cast<double>(std::max(g.neighbors[i].size(),
                                              g.neighbors[static_cast<std::size_t>(j)].size())));
      g.weights[i].push_back(w);
      g.self[i] -= w;
    }
  return g;
}

std::set<std::pair<int, int>> ring_edges(int n) {
  std::set<std::pair<int, int>> e;
  for (int i = 0; i < n; ++i)
    e.insert({std::min(i, (i + 1) % n), std::max(i, (i + 1) % n)});
  return e;
}

MixingSpectrum spectrum(const Graph& g, SpectrumMethod m) {
  return mixing_spectrum(g.neighbors, g.weights, g.self, m);
}

void check_same(const Graph& g) {
  const MixingSpectrum dense = spectrum(g, SpectrumMethod::dense);
  const MixingSpectrum lanczos = spectrum(g, SpectrumMethod::lanczos);
  CHECK(lanczos.gap == doctest::Approx(dense.gap).epsilon(1e-7));
  CHECK(lanczos.lambda_min == doctest::Approx(dense.lambda_min).epsilon(1e-9));
}

} // namespace

TEST_SUITE("topologies") {
  TEST_CASE("mixing_spectrum: a 600-node ring, Lanczos = dense = closed form") {
    const int n = 600;
    const Graph g = metropolis(n, ring_edges(n)); // W = 1/3 on the ring and the diagonal
    // Eigenvalues 1/3 + 2/3 cos(2 pi k / n): lambda_2 at k = 1, lambda_n = -1/3 at k = n/2.
    const double lambda_2 = 1.0 / 3 + 2.0 / 3 * std::cos(2 * std::numbers::pi / n);
    const MixingSpectrum s = spectrum(g, SpectrumMethod::lanczos);
    CHECK(s.gap == doctest::Approx(1 - lambda_2).epsilon(1e-7));
    CHECK(s.lambda_min == doctest::Approx(-1.0 / 3).epsilon(1e-12));
    check_same(g);
    // automatic picks Lanczos above kDenseSpectrumMaxNodes and agrees.
    CHECK(spectrum(g, SpectrumMethod::automatic).gap ==
          doctest::Approx(1 - lambda_2).epsilon(1e-7));
  }

  TEST_CASE("mixing_spectrum: a lazy odd ring has a positive smallest eigenvalue") {
    // W = I/2 + ring/4: eigenvalues 1/2 + 1/2 cos(2 pi k / n) >= 0, never the deflated 0.
    const int n = 601;
    Graph g = metropolis(n, ring_edges(n));
    for (std::size_t i = 0; i < g.self.size(); ++i) {
      g.weights[i] = {0.25, 0.25};
      g.self[i] = 0.5;
    }
    const MixingSpectrum s = spectrum(g, SpectrumMethod::lanczos);
    const double lambda_n = 0.5 + 0.5 * std::cos(2 * std::numbers::pi * 300 / n);
    REQUIRE(lambda_n > 0);
    CHECK(s.lambda_min == doctest::Approx(lambda_n).epsilon(1e-9));
    check_same(g);
  }

  TEST_CASE("mixing_spectrum: random graphs and a torus, Lanczos = dense") {
    std::mt19937_64 rng(7);
    for (int n : {530, 700}) {
      std::set<std::pair<int, int>> e = ring_edges(n); // connected
      std::uniform_int_distribution<int> node(0, n - 1);
      for (int k = 0; k < 2 * n; ++k) {
        const int a = node(rng), b = node(rng);
        if (a != b)
          e.insert({std::min(a, b), std::max(a, b)});
      }
      CAPTURE(n);
      check_same(metropolis(n, e));
    }
    const int side = 24;
    std::set<std::pair<int, int>> torus;
    for (int r = 0; r < side; ++r)
      for (int c = 0; c < side; ++c) {
        const int i = r * side + c;
        for (int j : {r * side + (c + 1) % side, ((r + 1) % side) * side + c})
          torus.insert({std::min(i, j), std::max(i, j)});
      }
    check_same(metropolis(side * side, torus));
  }

  TEST_CASE("mixing_spectrum: one node, and tiny graphs") {
    const Graph one{{{}}, {{}}, {1.0}};
    CHECK(spectrum(one, SpectrumMethod::lanczos).gap == 1.0);
    const Graph g = metropolis(5, ring_edges(5));
    check_same(g);
  }
}
