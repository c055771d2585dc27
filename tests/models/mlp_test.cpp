// SPDX-License-Identifier: MIT
// Mlp and softmax regression: layout, initialisation, gradients, evaluation, convergence.
#include "model_test_util.hpp"
#include "models/mlp.hpp"
#include "sim/core/rng.hpp"

#include <algorithm>
#include <cmath>
#include <doctest/doctest.h>
#include <limits>
#include <numeric>
#include <stdexcept>
#include <vector>

using namespace dtsim;
using namespace dtsim::testing;

namespace {

// Independent double-precision forward pass, written from the documented layout (per layer:
// W out x in column-major, then b), for the mean cross-entropy over a batch.
struct Reference {
  std::vector<int> sizes; // inputs, hidden..., classes

  // Returns the mean loss; fills the predicted class of each example and the smallest
  // |pre-activation| of any hidden unit.
  double loss(const std::vector<double>& p, const OwnedBatch& b, std::vector<int>* argmax = nullptr,
              double* min_abs_hidden = nullptr) const {
    double total = 0.0, min_abs = std::numeric_limits<double>::infinity();
    for (int e = 0; e < b.count(); ++e) {
      std::vector<double> a(b.features.begin() + static_cast<long>(e) * sizes[0],
                            b.features.begin() + static_cast<long>(e + 1) * sizes[0]);
      int predicted = 0;
      total += reference_dense_loss(p, 0, a, sizes, b.labels[static_cast<std::size_t>(e)],
                                    predicted, min_abs);
      if (argmax)
        argmax->push_back(predicted);
    }
    if (min_abs_hidden)
      *min_abs_hidden = min_abs;
    return total / b.count();
  }
};

std::vector<double> to_double(const std::vector<float>& v) {
  return {v.begin(), v.end()};
}

double grad_and_loss(const Model& m, const std::vector<float>& p, BatchView batch,
                     std::vector<float>& grad, int max_batch = 64) {
  auto ws = m.make_workspace(max_batch);
  grad.assign(m.num_params(), NAN);
  return m.loss_and_grad(p, batch, grad, *ws);
}

// Full-batch loss and accuracy via evaluate().
EvalResult eval_all(const Model& m, const std::vector<float>& p, const OwnedBatch& b) {
  auto ws = m.make_workspace(b.count());
  return m.evaluate(p, b.view(), *ws);
}

// Linearly separable data: class c is centred at 3 e_c (the first `classes` features), with
// N(0, 0.5^2) noise on every feature.
OwnedBatch separable_problem(int features, int classes, int count, std::uint64_t seed) {
  Rng rng(seed);
  OwnedBatch b;
  b.num_features = features;
  for (int e = 0; e < count; ++e) {
    const int c = static_cast<int>(rng.below(static_cast<std::uint64_t>(classes)));
    b.labels.push_back(c);
    for (int f = 0; f < features; ++f)
      b.features.push_back((f == c ? 3.0f : 0.0f) + static_cast<float>(0.5 * rng.normal()));
  }
  return b;
}

// Plain minibatch SGD over the data in a fixed cyclic order; returns the final parameters.
std::vector<float> train(const Model& m, const OwnedBatch& data, int steps, int batch, float lr,
                         std::uint64_t seed) {
  std::vector<float> p = init_params(m, seed), g(m.num_params());
  auto ws = m.make_workspace(batch);
  for (int s = 0; s < steps; ++s) {
    const int start = (s * batch) % (data.count() - batch + 1);
    const BatchView bv{data.features.data() + static_cast<std::size_t>(start) * data.num_features,
                       data.num_features, batch, data.labels.data() + start};
    m.loss_and_grad(p, bv, g, *ws);
    for (std::size_t i = 0; i < p.size(); ++i)
      p[i] -= lr * g[i];
  }
  return p;
}

} // namespace

TEST_SUITE("models") {
  TEST_CASE("Mlp: sizes, layout and description") {
    const Mlp mlp(784, {256, 128}, 10);
    CHECK(mlp.num_params() == 784 * 256 + 256 + 256 * 128 + 128 + 128 * 10 + 10);
    CHECK(mlp.describe() == "mlp 784-256-128-10 (235146 params)");
    REQUIRE(mlp.layers().size() == 3);
    CHECK(mlp.layers()[1].offset == 784 * 256 + 256);
    CHECK(mlp.layers()[2].offset == 784 * 256 + 256 + 256 * 128 + 128);
    // Forward everywhere, weight gradient everywhere, input gradient except the first layer.
    CHECK(mlp.flops_per_example() ==
          doctest::Approx(2.0 * (2 * 784 * 256 + 3 * 256 * 128 + 3 * 128 * 10)));

    const Mlp softmax(784, {}, 10);
    CHECK(softmax.num_params() == 7850);
    CHECK(softmax.describe() == "softmax 784-10 (7850 params)");
    CHECK(softmax.flops_per_example() == doctest::Approx(2.0 * 2 * 784 * 10));

    CHECK_THROWS_AS(Mlp(0, {4}, 3), std::invalid_argument);
    CHECK_THROWS_AS(Mlp(4, {0}, 3), std::invalid_argument);
    CHECK_THROWS_AS(Mlp(4, {4}, 1), std::invalid_argument);
  }

  TEST_CASE("Mlp: init is He-uniform, Glorot-uniform at the output, zero biases, seeded") {
    const Mlp mlp(300, {200}, 10);
    const std::vector<float> p = init_params(mlp, 5);
    const DenseLayer& hidden = mlp.layers()[0];
    const DenseLayer& output = mlp.layers()[1];
    auto check_layer = [&](const DenseLayer& l, double limit) {
      const auto w = l.weights(std::span<const float>(p));
      CHECK(w.cwiseAbs().maxCoeff() <= limit);
      CHECK(w.cwiseAbs().maxCoeff() > 0.98 * limit); // the whole range is used
      CHECK(std::fabs(w.mean()) < 0.02 * limit);
      // Variance of U(-a, a) is a^2 / 3.
      CHECK(static_cast<double>(w.squaredNorm()) / static_cast<double>(w.size()) ==
            doctest::Approx(limit * limit / 3.0).epsilon(0.05));
      const float* b = l.bias(std::span<const float>(p));
      CHECK(std::all_of(b, b + l.out, [](float x) { return x == 0.0f; }));
    };
    check_layer(hidden, std::sqrt(6.0 / 300));
    check_layer(output, std::sqrt(6.0 / (200 + 10)));
    CHECK(init_params(mlp, 5) == p);
    CHECK(init_params(mlp, 6) != p);
  }

  TEST_CASE("Mlp: uniform logits give loss log(classes) and the closed-form gradient") {
    const OwnedBatch b = random_batch(6, 9, 4, 1.0, 21);
    for (const std::vector<int>& hidden : {std::vector<int>{}, std::vector<int>{5, 3}}) {
      const Mlp m(6, hidden, 4);
      const std::vector<float> zero(m.num_params(), 0.0f);
      std::vector<float> g;
      CHECK(grad_and_loss(m, zero, b.view(), g) == doctest::Approx(std::log(4.0)).epsilon(1e-6));
      const EvalResult r = eval_all(m, zero, b);
      CHECK(r.loss_sum == doctest::Approx(9 * std::log(4.0)).epsilon(1e-6));
      CHECK(r.count == 9);
      if (hidden.empty()) {
        // dL/dW(c, f) = mean_e (1/4 - [y_e = c]) x_e(f); dL/db(c) = mean_e (1/4 - [y_e = c]).
        for (int c = 0; c < 4; ++c) {
          double db = 0.0;
          for (int e = 0; e < 9; ++e)
            db += (0.25 - (b.labels[e] == c ? 1.0 : 0.0)) / 9.0;
          CHECK(g[24 + c] == doctest::Approx(db).epsilon(1e-5));
          for (int f = 0; f < 6; ++f) {
            double dw = 0.0;
            for (int e = 0; e < 9; ++e)
              dw += (0.25 - (b.labels[e] == c ? 1.0 : 0.0)) *
                    static_cast<double>(b.features[e * 6 + f]) / 9.0;
            CHECK(g[f * 4 + c] == doctest::Approx(dw).epsilon(1e-5));
          }
        }
      }
    }
  }

  TEST_CASE("Mlp: softmax regression gradient matches central differences of its own loss") {
    const Mlp m(6, {}, 4);
    const OwnedBatch b = random_batch(6, 5, 4, 0.5, 3);
    std::vector<float> p = init_params(m, 4), g, scratch;
    grad_and_loss(m, p, b.view(), g);
    const float eps = 1e-2f;
    const double eps_d = eps;
    for (std::size_t i = 0; i < p.size(); ++i) {
      const float saved = p[i];
      p[i] = saved + eps;
      const double up = grad_and_loss(m, p, b.view(), scratch);
      p[i] = saved - eps;
      const double down = grad_and_loss(m, p, b.view(), scratch);
      p[i] = saved;
      const double fd = (up - down) / (2.0 * eps_d);
      CAPTURE(i);
      CHECK(g[i] == doctest::Approx(fd).epsilon(1e-2).scale(1e-2));
    }
  }

  TEST_CASE("Mlp: two-hidden-layer gradient matches central differences") {
    const Mlp m(5, {7, 6}, 3);
    const Reference ref{{5, 7, 6, 3}};
    const OwnedBatch b = random_batch(5, 6, 3, 1.0, 8);
    // Non-zero biases, so that their gradients and the ReLU masks are exercised.
    std::vector<float> p = init_params(m, 9);
    Rng rng(10);
    for (float& x : p)
      x += static_cast<float>(rng.uniform(-0.2, 0.2));
    std::vector<float> g;
    const double loss = grad_and_loss(m, p, b.view(), g);

    std::vector<double> pd = to_double(p);
    double min_abs_hidden = 0.0;
    CHECK(loss == doctest::Approx(ref.loss(pd, b, nullptr, &min_abs_hidden)).epsilon(1e-5));
    // Differences in double with a step far below the distance to any ReLU kink.
    const double eps = 1e-6;
    REQUIRE(min_abs_hidden > 1e3 * eps);
    double worst = 0.0;
    for (std::size_t i = 0; i < pd.size(); ++i) {
      const double saved = pd[i];
      pd[i] = saved + eps;
      const double up = ref.loss(pd, b);
      pd[i] = saved - eps;
      const double down = ref.loss(pd, b);
      pd[i] = saved;
      const double fd = (up - down) / (2.0 * eps);
      worst = std::max(worst,
                       std::fabs(static_cast<double>(g[i]) - fd) / std::max(1e-2, std::fabs(fd)));
    }
    CHECK(worst < 1e-3);
  }

  TEST_CASE("Mlp: batch gradient is the mean of single-example gradients") {
    const Mlp m(8, {6}, 5);
    const OwnedBatch b = random_batch(8, 7, 5, 1.0, 12);
    const std::vector<float> p = init_params(m, 13);
    std::vector<float> g_batch, g_one;
    const double loss = grad_and_loss(m, p, b.view(), g_batch);
    std::vector<double> mean(m.num_params(), 0.0);
    double mean_loss = 0.0;
    for (int e = 0; e < b.count(); ++e) {
      mean_loss += grad_and_loss(m, p, b.example(e), g_one) / b.count();
      for (std::size_t i = 0; i < mean.size(); ++i)
        mean[i] += static_cast<double>(g_one[i]) / b.count();
    }
    CHECK(loss == doctest::Approx(mean_loss).epsilon(1e-6));
    double worst = 0.0;
    for (std::size_t i = 0; i < mean.size(); ++i)
      worst = std::max(worst, std::fabs(static_cast<double>(g_batch[i]) - mean[i]));
    CHECK(worst < 1e-6);
  }

  TEST_CASE("Mlp: evaluate agrees with loss_and_grad and with the reference argmax") {
    const Mlp m(10, {12}, 6);
    const Reference ref{{10, 12, 6}};
    const OwnedBatch b = random_batch(10, 40, 6, 2.0, 14);
    const std::vector<float> p = init_params(m, 15);
    std::vector<float> g;
    const double loss = grad_and_loss(m, p, b.view(), g);
    const EvalResult r = eval_all(m, p, b);
    CHECK(r.count == 40);
    CHECK(r.loss_sum / 40.0 == doctest::Approx(loss).epsilon(1e-6));
    std::vector<int> argmax;
    ref.loss(to_double(p), b, &argmax);
    std::int64_t hits = 0;
    for (int e = 0; e < 40; ++e)
      hits += argmax[e] == b.labels[e] ? 1 : 0;
    CHECK(r.correct == hits);
    CHECK(hits > 0); // the check above is not vacuous
    auto ws = m.make_workspace(4);
    CHECK(m.evaluate(p, BatchView{b.features.data(), 10, 0, b.labels.data()}, *ws).count == 0);
  }

  TEST_CASE("Mlp: results are bitwise independent of max_batch and of earlier calls") {
    const Mlp m(30, {20, 10}, 4);
    const OwnedBatch b = random_batch(30, 16, 4, 1.0, 16);
    const OwnedBatch other = random_batch(30, 50, 4, 3.0, 17);
    const std::vector<float> p = init_params(m, 18);
    std::vector<float> g_small, g_large(m.num_params());
    const double loss_small = grad_and_loss(m, p, b.view(), g_small, 16);
    auto ws = m.make_workspace(200);
    m.loss_and_grad(p, other.view(), g_large, *ws); // leaves different data in the workspace
    const double loss_large = m.loss_and_grad(p, b.view(), g_large, *ws);
    CHECK(loss_small == loss_large);
    CHECK(g_small == g_large);
  }

  TEST_CASE("Mlp: misuse of workspaces and labels is an internal error") {
    const Mlp m(4, {3}, 2), other(4, {3}, 2);
    const OwnedBatch b = random_batch(4, 5, 2, 1.0, 19);
    const std::vector<float> p = init_params(m, 20);
    std::vector<float> g(m.num_params());
    auto small = m.make_workspace(4);
    CHECK_THROWS_AS(m.loss_and_grad(p, b.view(), g, *small), std::logic_error);
    auto foreign = other.make_workspace(8);
    CHECK_THROWS_AS(m.loss_and_grad(p, b.view(), g, *foreign), std::logic_error);
    OwnedBatch bad = b;
    bad.labels[2] = 2;
    auto ws = m.make_workspace(8);
    CHECK_THROWS_AS(m.loss_and_grad(p, bad.view(), g, *ws), std::logic_error);
    CHECK_THROWS_AS(m.evaluate(p, bad.view(), *ws), std::logic_error);
  }

  TEST_CASE("Mlp: SGD fits a separable problem (softmax and two hidden layers)") {
    const OwnedBatch data = separable_problem(8, 4, 256, 22);
    for (const std::vector<int>& hidden : {std::vector<int>{}, std::vector<int>{16, 16}}) {
      const Mlp m(8, hidden, 4);
      CAPTURE(m.describe());
      const EvalResult before = eval_all(m, init_params(m, 23), data);
      const EvalResult after = eval_all(m, train(m, data, 300, 16, 0.1f, 23), data);
      CHECK(after.loss_sum < 0.05 * before.loss_sum);
      CHECK(after.correct == data.count());
    }
  }
}
