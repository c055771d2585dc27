// SPDX-License-Identifier: MIT
// softmax_xent: known values, stability for large logits, gradient structure, argmax.
#include "models/softmax_xent.hpp"

#include <cmath>
#include <doctest/doctest.h>
#include <vector>

using namespace dtsim;

TEST_SUITE("models") {
  TEST_CASE("softmax_xent: known value and gradient") {
    // Column 0: logits (0, log 3) -> p = (1/4, 3/4); label 1 -> loss -log(3/4).
    // Column 1: logits (2, 2) -> p = (1/2, 1/2); label 0 -> loss log 2.
    const std::vector<float> z{0.0f, std::log(3.0f), 2.0f, 2.0f};
    std::vector<float> d(4);
    const std::vector<std::int32_t> y{1, 0};
    const double loss =
        softmax_xent_grad(mat_map(z.data(), 2, 2, 2), y.data(), mat_map(d.data(), 2, 2, 2));
    CHECK(loss == doctest::Approx((-std::log(0.75) + std::log(2.0)) / 2).epsilon(1e-6));
    CHECK(d[0] == doctest::Approx(0.25 / 2));
    CHECK(d[1] == doctest::Approx(-0.25 / 2));
    CHECK(d[2] == doctest::Approx(-0.5 / 2));
    CHECK(d[3] == doctest::Approx(0.5 / 2));
  }

  TEST_CASE("softmax_xent: large logits neither overflow nor lose precision") {
    // exp(1e4) overflows float; shifting by the maximum must give the same result as the
    // small logits (0, 1, -1).
    const std::vector<float> big{1e4f, 1e4f + 1.0f, 1e4f - 1.0f}, small{0.0f, 1.0f, -1.0f};
    std::vector<float> d_big(3), d_small(3);
    const std::int32_t y = 2;
    const double l_big =
        softmax_xent_grad(mat_map(big.data(), 3, 1, 3), &y, mat_map(d_big.data(), 3, 1, 3));
    const double l_small =
        softmax_xent_grad(mat_map(small.data(), 3, 1, 3), &y, mat_map(d_small.data(), 3, 1, 3));
    CHECK(std::isfinite(l_big));
    CHECK(l_big == doctest::Approx(l_small).epsilon(1e-5));
    for (int i = 0; i < 3; ++i)
      CHECK(d_big[i] == doctest::Approx(d_small[i]).epsilon(1e-5));
    // A hopeless prediction still has a finite loss (not log(0)).
    const std::vector<float> far{0.0f, 200.0f};
    std::vector<float> d_far(2);
    const std::int32_t y0 = 0;
    CHECK(softmax_xent_grad(mat_map(far.data(), 2, 1, 2), &y0, mat_map(d_far.data(), 2, 1, 2)) ==
          doctest::Approx(200.0));
  }

  TEST_CASE("softmax_xent: gradient columns sum to zero, eval counts the first maximum") {
    const std::vector<float> z{0.3f, -1.0f, 0.3f, 2.0f, 0.5f, 0.1f};
    std::vector<float> d(6);
    const std::vector<std::int32_t> y{2, 0};
    const double loss =
        softmax_xent_grad(mat_map(z.data(), 3, 2, 3), y.data(), mat_map(d.data(), 3, 2, 3));
    CHECK(std::fabs(d[0] + d[1] + d[2]) < 1e-7);
    CHECK(std::fabs(d[3] + d[4] + d[5]) < 1e-7);
    const EvalResult r = softmax_xent_eval(mat_map(z.data(), 3, 2, 3), y.data());
    CHECK(r.count == 2);
    CHECK(r.loss_sum == doctest::Approx(2 * loss));
    // Column 0 ties 0.3 at classes 0 and 2: the first wins, so label 2 is not a hit.
    CHECK(r.correct == 1);
  }
}
