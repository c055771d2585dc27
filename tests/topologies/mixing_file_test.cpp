// SPDX-License-Identifier: MIT
// A user's mixing matrix: accepted when it fits the graph and is doubly stochastic; each
// violation named by its entry.
#include "topologies/mixing_file.hpp"
#include "topologies/topology.hpp"

#include <doctest/doctest.h>
#include <stdexcept>

using namespace dtsim;

namespace {

using Rows = std::vector<std::vector<double>>;

// The ring of 4: 0-1-2-3-0.
const std::vector<std::vector<int>> kRing = {{1, 3}, {0, 2}, {1, 3}, {0, 2}};

// A valid W: 0.5 on the diagonal, 0.25 on each edge.
Rows ring_w() {
  return {{0.5, 0.25, 0, 0.25}, {0.25, 0.5, 0.25, 0}, {0, 0.25, 0.5, 0.25}, {0.25, 0, 0.25, 0.5}};
}

std::string error_of(const Rows& w) {
  try {
    mixing_from_matrix(w, kRing, [](const std::string& m) { throw std::runtime_error(m); });
  } catch (const std::runtime_error& e) {
    return e.what();
  }
  return "(no error)";
}

} // namespace

TEST_SUITE("topologies") {
  TEST_CASE("mixing file: a valid W becomes the topology's, spectral gap included") {
    const MixingWeights w =
        mixing_from_matrix(ring_w(), kRing, [](const std::string& m) { FAIL(m); });
    CHECK(w.self[2] == 0.5);
    CHECK(w.weights[0] == std::vector<double>{0.25, 0.25});
    const Topology t("ring", kRing, w);
    // Eigenvalues of this W are 1, 0.5, 0.5, 0: gap 1 - 0.5.
    CHECK(t.spectral_gap() == doctest::Approx(0.5));
  }

  TEST_CASE("mixing file: entries within 1e-9 are made exactly doubly stochastic") {
    Rows w = ring_w();
    w[0][1] = 0.2500000001; // 1e-10 off: row 0 sums to 1 + 1e-10, W not quite symmetric
    const MixingWeights m = mixing_from_matrix(w, kRing, [](const std::string& e) { FAIL(e); });
    CHECK_NOTHROW(Topology("ring", kRing, m)); // its checks hold to 1e-12
  }

  TEST_CASE("mixing file: each violation names the entry") {
    Rows w = ring_w();
    w.pop_back();
    CHECK(error_of(w).find("expected a 4 x 4 matrix") != std::string::npos);

    w = ring_w();
    w[0][2] = 0.1;
    w[2][0] = 0.1;
    w[0][0] = 0.4;
    w[2][2] = 0.4;
    CHECK(error_of(w).find("W(0,2) = 0.1 but 0 -- 2 is not an edge") != std::string::npos);

    w = ring_w();
    w[0][1] = w[1][0] = 0;
    w[0][0] = w[1][1] = 0.75;
    CHECK(error_of(w).find("W(0,1) = 0 on the edge 0 -- 1") != std::string::npos);

    w = ring_w(); // symmetric, rows sum to 1, but a negative weight
    w[0][1] = w[1][0] = -0.25;
    w[0][0] = w[1][1] = 1.0;
    CHECK(error_of(w).find("W(0,1) = -0.25 on the edge 0 -- 1: every edge needs a weight > 0") !=
          std::string::npos);

    w = ring_w();
    w[1][1] = 0.6;
    CHECK(error_of(w).find("row 1 sums to 1.1") != std::string::npos);

    w = ring_w();
    w[0][1] = 0.3;
    w[0][0] = 0.45;
    CHECK(error_of(w).find("W(0,1) = 0.3 but W(1,0) = 0.25: W must be symmetric") !=
          std::string::npos);

    w = {{0, 0.5, 0, 0.5}, {0.5, 0, 0.5, 0}, {0, 0.5, 0, 0.5}, {0.5, 0, 0.5, 0}};
    CHECK(error_of(w).find("W(0,0) = 0: the diagonal must be > 0") != std::string::npos);
  }
}
