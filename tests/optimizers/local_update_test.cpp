// SPDX-License-Identifier: MIT
// LocalUpdate: heavy-ball and Nesterov momentum and weight decay, by hand.
#include "sim/core/params.hpp"
#include "sim/optimizers/local_update.hpp"
#include "support/params_helper.hpp"

#include <cmath>
#include <doctest/doctest.h>

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
}
