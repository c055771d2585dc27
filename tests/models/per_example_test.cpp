// SPDX-License-Identifier: MIT
// Per-example gradients of Mlp and softmax regression from the one batched backward pass.
#include "model_test_util.hpp"
#include "models/mlp.hpp"

#include <algorithm>
#include <cmath>
#include <doctest/doctest.h>
#include <vector>

using namespace dtsim;
using namespace dtsim::testing;

namespace {

struct PerExample {
  double loss = 0;
  std::vector<float> grad;
  std::vector<float> columns; // num_params x count, column-major
};

PerExample per_example(const Model& m, const std::vector<float>& p, const BatchView& b) {
  auto ws = m.make_workspace(b.count);
  PerExample r;
  r.grad.assign(m.num_params(), NAN);
  r.columns.assign(m.num_params() * static_cast<std::size_t>(b.count), NAN);
  r.loss = m.loss_and_per_example_grads(p, b, r.grad, r.columns, *ws);
  return r;
}

double batch_grad(const Model& m, const std::vector<float>& p, const BatchView& b,
                  std::vector<float>& g) {
  auto ws = m.make_workspace(std::max(1, b.count));
  g.assign(m.num_params(), NAN);
  return m.loss_and_grad(p, b, g, *ws);
}

// Largest |a_i - b_i| relative to max(1e-3, |b_i|).
double worst_relative(const float* a, const float* b, std::size_t n) {
  double worst = 0;
  for (std::size_t i = 0; i < n; ++i) {
    const auto x = static_cast<double>(a[i]), y = static_cast<double>(b[i]);
    worst = std::max(worst, std::fabs(x - y) / std::max(1e-3, std::fabs(y)));
  }
  return worst;
}

} // namespace

TEST_SUITE("models") {
  TEST_CASE("Mlp per-example gradients: the mean of the columns is the batch gradient") {
    for (const std::vector<int>& hidden : {std::vector<int>{}, std::vector<int>{12, 7}}) {
      const Mlp m(10, hidden, 4);
      CAPTURE(m.describe());
      REQUIRE(m.supports_per_example_grads());
      const OwnedBatch b = random_batch(10, 9, 4, 1.5, 41);
      const std::vector<float> p = init_params(m, 42);
      const PerExample r = per_example(m, p, b.view());
      std::vector<float> g;
      const double loss = batch_grad(m, p, b.view(), g);
      // The batch outputs are loss_and_grad's, bit for bit (same pass).
      CHECK(r.loss == loss);
      CHECK(r.grad == g);
      std::vector<float> mean(m.num_params(), 0.0f);
      for (std::size_t i = 0; i < mean.size(); ++i) {
        double s = 0;
        for (int k = 0; k < b.count(); ++k)
          s += static_cast<double>(r.columns[static_cast<std::size_t>(k) * m.num_params() + i]);
        mean[i] = static_cast<float>(s / b.count());
      }
      double worst = 0;
      for (std::size_t i = 0; i < mean.size(); ++i)
        worst = std::max(worst, std::fabs(static_cast<double>(mean[i] - g[i])));
      CHECK(worst < 1e-6);
    }
  }

  TEST_CASE("Mlp per-example gradients: each column is that example's own gradient") {
    for (const std::vector<int>& hidden : {std::vector<int>{}, std::vector<int>{12, 7}}) {
      const Mlp m(10, hidden, 4);
      CAPTURE(m.describe());
      const OwnedBatch b = random_batch(10, 6, 4, 1.5, 43);
      const std::vector<float> p = init_params(m, 44);
      const PerExample r = per_example(m, p, b.view());
      std::vector<float> g_one;
      for (int k = 0; k < b.count(); ++k) {
        CAPTURE(k);
        batch_grad(m, p, b.example(k), g_one);
        const float* col = r.columns.data() + static_cast<std::size_t>(k) * m.num_params();
        CHECK(worst_relative(col, g_one.data(), m.num_params()) < 1e-4);
      }
      // A batch of one: the single column is the gradient itself.
      const PerExample one = per_example(m, p, b.example(2));
      batch_grad(m, p, b.example(2), g_one);
      CHECK(one.columns == g_one);
    }
  }

  TEST_CASE("Model: the default per-example pass reports no support") {
    struct Plain final : Model {
      std::string describe() const override { return "plain"; }
      std::size_t num_params() const override { return 1; }
      void init(std::span<float>, Rng&) const override {}
      std::unique_ptr<Workspace> make_workspace(int) const override { return nullptr; }
      double loss_and_grad(std::span<const float>, const BatchView&, std::span<float>,
                           Workspace&) const override {
        return 0;
      }
      EvalResult evaluate(std::span<const float>, const BatchView&, Workspace&) const override {
        return {};
      }
      double flops_per_example() const override { return 0; }
    } plain;
    CHECK_FALSE(plain.supports_per_example_grads());
  }
}
