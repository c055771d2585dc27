// SPDX-License-Identifier: MIT
// LocalUpdate: heavy-ball and Nesterov momentum and weight decay, by hand.
#include "sim/core/params.hpp"
#include "sim/optimizers/local_update.hpp"
#include "sim/optimizers/node_vectors.hpp"
#include "support/params_helper.hpp"

#include <algorithm>
#include <cmath>
#include <doctest/doctest.h>
#include <stdexcept>

using namespace dtsim;

TEST_SUITE("optimizers") {
  TEST_CASE("LocalUpdate: heavy ball, Nesterov and weight decay match hand computation") {
    const std::vector<float> g1 = {1.0f, -2.0f}, g2 = {0.5f, 0.5f}, x = {2.0f, 4.0f};
    std::vector<float> u(2);
    SUBCASE("heavy ball") {
      LocalUpdate lu(testing::make_params({{"momentum", "0.5"}}), 1, 2);
      lu.direction(0, g1, x, u);
      CHECK(u == std::vector<float>{1.0f, -2.0f});
      lu.direction(0, g2, x, u); // m = 0.5*m + g2
      CHECK(u == std::vector<float>{1.0f, -0.5f});
    }
    SUBCASE("nesterov") {
      LocalUpdate lu(testing::make_params({{"momentum", "0.5"}, {"nesterov", "true"}}), 1, 2);
      lu.direction(0, g1, x, u); // m = g1; u = g1 + 0.5*m
      CHECK(u == std::vector<float>{1.5f, -3.0f});
      lu.direction(0, g2, x, u); // m = (1, -0.5); u = g2 + 0.5*m
      CHECK(u == std::vector<float>{1.0f, 0.25f});
    }
    SUBCASE("weight decay") {
      LocalUpdate lu(testing::make_params({{"weight_decay", "0.25"}}), 1, 2);
      lu.direction(0, g1, x, u);
      CHECK(u == std::vector<float>{1.5f, -1.0f});
    }
  }

  TEST_CASE("LocalUpdate: momentum of 1 or more is refused") {
    CHECK_THROWS_WITH(LocalUpdate(testing::make_params({{"momentum", "1.2"}}), 1, 2),
                      "test.yaml:2: momentum: expected a number in [0, 1), got 1.2");
  }
}

TEST_SUITE("optimizers") {
  TEST_CASE("LocalUpdate: the fused step equals x - lr * direction for every variant") {
    const std::size_t d = 5000; // more than one block
    std::vector<float> g(d), x(d), out(d), u(d);
    for (std::size_t i = 0; i < d; ++i) {
      g[i] = std::sin(0.1f * static_cast<float>(i));
      x[i] = std::cos(0.07f * static_cast<float>(i));
    }
    for (const char* nesterov : {"false", "true"}) {
      CAPTURE(nesterov);
      LocalUpdate a(testing::make_params(
                        {{"momentum", "0.9"}, {"nesterov", nesterov}, {"weight_decay", "0.01"}}),
                    1, d);
      LocalUpdate b(testing::make_params(
                        {{"momentum", "0.9"}, {"nesterov", nesterov}, {"weight_decay", "0.01"}}),
                    1, d);
      for (int step = 0; step < 3; ++step) {
        a.step(0, g, x, 0.1f, out);
        b.direction(0, g, x, u);
        for (std::size_t i = 0; i < d; i += 97)
          CHECK(out[i] == doctest::Approx(x[i] - 0.1f * u[i]).epsilon(1e-6));
      }
    }
  }

  TEST_CASE("NodeVectors: zero when a node first takes its own, none made before, none after "
            "release") {
    NodeVectors v(3, 5);
    CHECK(v.bytes() == 3 * 5 * sizeof(float)); // what every node will hold
    v[1](2) = 7.0f;                            // node 1 takes its vector
    CHECK(v[1].size() == 5);
    CHECK(v[1](2) == 7.0f); // kept, not made again
    CHECK(v[1].sum() == 7.0f);
    const std::span<float> s = v.span(2);
    CHECK(s.size() == 5);
    CHECK(std::all_of(s.begin(), s.end(), [](float e) { return e == 0.0f; }));
    v.release();
    CHECK(v.bytes() == 0);
    CHECK(v.size() == 0);
    CHECK_THROWS_AS(v[0], std::logic_error); // a step after release is refused
  }

  TEST_CASE("LocalUpdate: states its momenta in full, none after release, and refuses a step") {
    // A resident backend keeps the momenta: a method that attaches releases these before any
    // step (they are made on each node's first step: NodeVectors, above).
    LocalUpdate lu(testing::make_params({{"momentum", "0.9"}}), 4, 1000);
    CHECK(lu.state_bytes() == 4 * 1000 * sizeof(float));
    lu.release_state();
    CHECK(lu.state_bytes() == 0);
    std::vector<float> g(1000, 1.0f), x(1000, 0.0f), out(1000);
    CHECK_THROWS_AS(lu.step(0, g, x, 0.1f, out), std::logic_error);
  }
}
