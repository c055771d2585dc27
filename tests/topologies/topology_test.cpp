// SPDX-License-Identifier: MIT
// Topology constructor: it accepts valid graphs and refuses every broken invariant.
#include "topologies/mixing.hpp"
#include "topologies/topology.hpp"

#include <doctest/doctest.h>
#include <stdexcept>

using namespace dtsim;

namespace {
// Path 0-1-2 with Metropolis weights: a valid, non-regular starting point to break.
std::vector<std::vector<int>> path3() {
  return {{1}, {0, 2}, {1}};
}
} // namespace

TEST_SUITE("topologies") {
  TEST_CASE("Topology: accessors of a valid path graph") {
    const Topology t("path", path3(), metropolis_mixing(path3()));
    CHECK(t.name() == "path");
    CHECK(t.size() == 3);
    CHECK(t.min_degree() == 1);
    CHECK(t.max_degree() == 2);
    CHECK(t.num_edges() == 2);
    CHECK(t.diameter() == 2);
    REQUIRE(t.neighbors(1).size() == 2);
    CHECK(t.neighbors(1)[0] == 0);
    CHECK(t.neighbors(1)[1] == 2);
    CHECK(t.weights(1)[0] == doctest::Approx(1.0 / 3));
    CHECK(t.weights(0)[0] == doctest::Approx(1.0 / 3));
    CHECK(t.self_weight(0) == doctest::Approx(2.0 / 3));
    // W = I - L/3 for the path Laplacian with eigenvalues 0, 1, 3: spectrum 1, 2/3, 0.
    CHECK(t.spectral_gap() == doctest::Approx(1.0 / 3).epsilon(1e-12));
  }

  TEST_CASE("Topology: a single node has W = 1, diameter 0 and gap 1") {
    const Topology t("one", {{}}, Eigen::MatrixXd::Ones(1, 1));
    CHECK(t.size() == 1);
    CHECK(t.diameter() == 0);
    CHECK(t.num_edges() == 0);
    CHECK(t.spectral_gap() == 1.0);
  }

  TEST_CASE("Topology: the gap counts the most negative eigenvalue too") {
    // 4-cycle with edge weight 0.45: W = I - 0.45 L, spectrum {1, 0.1, 0.1, -0.8}, so
    // |lambda_n| = 0.8 sets the gap, not lambda_2.
    Eigen::MatrixXd w(4, 4);
    w << 0.1, 0.45, 0, 0.45, 0.45, 0.1, 0.45, 0, 0, 0.45, 0.1, 0.45, 0.45, 0, 0.45, 0.1;
    const Topology t("cycle", {{1, 3}, {0, 2}, {1, 3}, {0, 2}}, w);
    CHECK(t.spectral_gap() == doctest::Approx(0.2).epsilon(1e-12));
    CHECK(t.diameter() == 2);
  }

  TEST_CASE("Topology: broken invariants are refused") {
    Eigen::MatrixXd w = metropolis_mixing(path3());
    SUBCASE("no nodes") {
      CHECK_THROWS_AS(Topology("x", {}, Eigen::MatrixXd()), std::invalid_argument);
    }
    SUBCASE("wrong matrix size") {
      CHECK_THROWS_AS(Topology("x", path3(), Eigen::MatrixXd::Identity(2, 2)),
                      std::invalid_argument);
    }
    SUBCASE("neighbour out of range") {
      CHECK_THROWS_AS(Topology("x", {{1}, {0, 3}, {1}}, w), std::invalid_argument);
    }
    SUBCASE("self-loop in the neighbour list") {
      CHECK_THROWS_AS(Topology("x", {{0, 1}, {0, 2}, {1}}, w), std::invalid_argument);
    }
    SUBCASE("unsorted neighbours") {
      CHECK_THROWS_AS(Topology("x", {{1}, {2, 0}, {1}}, w), std::invalid_argument);
    }
    SUBCASE("edge listed on one side only") {
      CHECK_THROWS_AS(Topology("x", {{1}, {0, 2}, {}}, w), std::invalid_argument);
    }
    SUBCASE("rows do not sum to 1") {
      w(0, 0) += 1e-9;
      CHECK_THROWS_AS(Topology("x", path3(), w), std::invalid_argument);
    }
    SUBCASE("not symmetric (rows still sum to 1)") {
      w(0, 1) += 0.1;
      w(0, 0) -= 0.1;
      CHECK_THROWS_AS(Topology("x", path3(), w), std::invalid_argument);
    }
    SUBCASE("negative weight") {
      Eigen::MatrixXd v(2, 2);
      v << 1.5, -0.5, -0.5, 1.5;
      CHECK_THROWS_AS(Topology("x", {{1}, {0}}, v), std::invalid_argument);
    }
    SUBCASE("weight on a non-edge") {
      Eigen::MatrixXd v = Eigen::MatrixXd::Constant(3, 3, 1.0 / 3);
      CHECK_THROWS_AS(Topology("x", path3(), v), std::invalid_argument);
    }
    SUBCASE("zero weight on an edge") {
      CHECK_THROWS_AS(Topology("x", {{1}, {0}}, Eigen::MatrixXd::Identity(2, 2)),
                      std::invalid_argument);
    }
    SUBCASE("disconnected graph") {
      CHECK_THROWS_AS(Topology("x", {{}, {}}, Eigen::MatrixXd::Identity(2, 2)),
                      std::invalid_argument);
    }
  }
}
