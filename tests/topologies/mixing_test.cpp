// SPDX-License-Identifier: MIT
// Mixing weights: Metropolis-Hastings and uniform rules on small hand-checked graphs.
#include "topologies/mixing.hpp"

#include <doctest/doctest.h>
#include <stdexcept>

using namespace dtsim;

TEST_SUITE("topologies") {
  TEST_CASE("metropolis_mixing: path 0-1-2 has the hand-derived weights") {
    // Degrees 1, 2, 1: every edge weighs 1/(1+2) = 1/3, so the middle keeps 1/3, the ends 2/3.
    const Eigen::MatrixXd w = metropolis_mixing({{1}, {0, 2}, {1}});
    Eigen::MatrixXd expected(3, 3);
    expected << 2.0 / 3, 1.0 / 3, 0, 1.0 / 3, 1.0 / 3, 1.0 / 3, 0, 1.0 / 3, 2.0 / 3;
    CHECK((w - expected).cwiseAbs().maxCoeff() < 1e-15);
  }

  TEST_CASE("uniform_mixing: 1/(deg+1) on a regular graph, refused otherwise") {
    const Eigen::MatrixXd w = uniform_mixing({{1, 2}, {0, 2}, {0, 1}});
    CHECK((w.array() - 1.0 / 3).abs().maxCoeff() < 1e-15);
    CHECK(is_regular({{1, 2}, {0, 2}, {0, 1}}));
    CHECK_FALSE(is_regular({{1}, {0, 2}, {1}}));
    CHECK_THROWS_AS(uniform_mixing({{1}, {0, 2}, {1}}), std::invalid_argument);
  }
}
