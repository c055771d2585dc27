// SPDX-License-Identifier: MIT
// A made workspace is all the memory a step needs: loss_and_grad and evaluate never allocate.
#include "model_test_util.hpp"
#include "models/cnn.hpp"
#include "models/mlp.hpp"
#include "models/resnet.hpp"

#include <cstdlib>
#include <doctest/doctest.h>
#include <new>
#include <vector>

// Every heap allocation of this executable is counted. Eigen allocates with std::malloc, not
// operator new, so the test target links with -Wl,--wrap=malloc (and calloc, realloc,
// posix_memalign, aligned_alloc): calls from our objects and the static libraries land in the
// __wrap_ functions below. operator new is replaced too, for allocations made inside
// libstdc++.so, which --wrap cannot see.
namespace {
std::size_t g_allocations = 0;
} // namespace

extern "C" {
void* __real_malloc(std::size_t n);
void* __real_calloc(std::size_t count, std::size_t n);
void* __real_realloc(void* p, std::size_t n);
int __real_posix_memalign(void** p, std::size_t align, std::size_t n);
void* __real_aligned_alloc(std::size_t align, std::size_t n);

void* __wrap_malloc(std::size_t n) {
  ++g_allocations;
  return __real_malloc(n);
}
void* __wrap_calloc(std::size_t count, std::size_t n) {
  ++g_allocations;
  return __real_calloc(count, n);
}
void* __wrap_realloc(void* p, std::size_t n) {
  ++g_allocations;
  return __real_realloc(p, n);
}
int __wrap_posix_memalign(void** p, std::size_t align, std::size_t n) {
  ++g_allocations;
  return __real_posix_memalign(p, align, n);
}
void* __wrap_aligned_alloc(std::size_t align, std::size_t n) {
  ++g_allocations;
  return __real_aligned_alloc(align, n);
}
}

void* operator new(std::size_t n) {
  if (void* p = std::malloc(n == 0 ? 1 : n)) // counted by __wrap_malloc
    return p;
  throw std::bad_alloc();
}
void* operator new[](std::size_t n) {
  return ::operator new(n);
}
void operator delete(void* p) noexcept {
  std::free(p);
}
void operator delete[](void* p) noexcept {
  std::free(p);
}
void operator delete(void* p, std::size_t) noexcept {
  std::free(p);
}
void operator delete[](void* p, std::size_t) noexcept {
  std::free(p);
}

using namespace dtsim;
using namespace dtsim::testing;

TEST_SUITE("models") {
  TEST_CASE("no allocation: the counter sees operator new and Eigen's allocations") {
    std::size_t before = g_allocations;
    std::vector<int>* v = new std::vector<int>(10);
    delete v;
    CHECK(g_allocations >= before + 2);
    before = g_allocations;
    {
      const Eigen::MatrixXf m = Eigen::MatrixXf::Zero(7, 9); // Eigen's aligned_malloc
      CHECK(m.sum() == 0.0f);
    }
    CHECK(g_allocations == before + 1);
  }

  TEST_CASE("no allocation: loss_and_grad and evaluate of the 784-256-128-10 MLP and softmax") {
    const int max_batch = 128;
    const OwnedBatch data = random_batch(784, max_batch, 10, 1.0, 31);
    for (const std::vector<int>& hidden : {std::vector<int>{256, 128}, std::vector<int>{}}) {
      const Mlp m(784, hidden, 10);
      CAPTURE(m.describe());
      const std::vector<float> p = init_params(m, 32);
      std::vector<float> g(m.num_params());
      auto ws = m.make_workspace(max_batch);
      // From the first call on: the workspace must already hold everything.
      const std::size_t before = g_allocations;
      double sink = 0.0;
      for (int n : {max_batch, 32, 1, 77}) {
        const BatchView b{data.features.data(), 784, n, data.labels.data()};
        sink += m.loss_and_grad(p, b, g, *ws);
        sink += m.evaluate(p, b, *ws).loss_sum;
      }
      const std::size_t during = g_allocations - before;
      CHECK(during == 0);
      CHECK(std::isfinite(sink));
    }
  }

  TEST_CASE("no allocation: LeNet loss_and_grad, per-example gradients and evaluate") {
    const int max_batch = 40;
    Cnn::Config c;
    c.input_shape = {1, 28, 28};
    c.padding = {2, 0};
    const Cnn m(c);
    const OwnedBatch data = random_batch(784, max_batch, 10, 1.0, 33);
    const std::vector<float> p = init_params(m, 34);
    std::vector<float> g(m.num_params()), cols(m.num_params() * max_batch);
    auto ws = m.make_workspace(max_batch);
    const std::size_t before = g_allocations;
    double sink = 0.0;
    for (int n : {max_batch, 32, 1, 17}) {
      const BatchView b{data.features.data(), 784, n, data.labels.data()};
      sink += m.loss_and_grad(p, b, g, *ws);
      sink += m.evaluate(p, b, *ws).loss_sum;
      sink += m.loss_and_per_example_grads(
          p, b, g, std::span<float>(cols.data(), m.num_params() * static_cast<std::size_t>(n)),
          *ws);
    }
    CHECK(g_allocations - before == 0);
    CHECK(std::isfinite(sink));
  }

  TEST_CASE("no allocation: ResNet-20 loss_and_grad and evaluate") {
    const int max_batch = 4;
    const ResNet m({{3, 16, 16}, 10, 3, 2});
    const OwnedBatch data = random_batch(3 * 16 * 16, max_batch, 10, 1.0, 35);
    const std::vector<float> p = init_params(m, 36);
    std::vector<float> g(m.num_params());
    auto ws = m.make_workspace(max_batch);
    const std::size_t before = g_allocations;
    double sink = 0.0;
    for (int n : {max_batch, 1, 3}) {
      const BatchView b{data.features.data(), 3 * 16 * 16, n, data.labels.data()};
      sink += m.loss_and_grad(p, b, g, *ws);
      sink += m.evaluate(p, b, *ws).loss_sum;
    }
    CHECK(g_allocations - before == 0);
    CHECK(std::isfinite(sink));
  }

  TEST_CASE("no allocation: the per-example gradient pass needs no more than the workspace") {
    const int max_batch = 16;
    const OwnedBatch data = random_batch(784, max_batch, 10, 1.0, 33);
    for (const std::vector<int>& hidden : {std::vector<int>{64}, std::vector<int>{}}) {
      const Mlp m(784, hidden, 10);
      CAPTURE(m.describe());
      const std::vector<float> p = init_params(m, 34);
      std::vector<float> g(m.num_params());
      std::vector<float> per(m.num_params() * max_batch);
      auto ws = m.make_workspace(max_batch);
      const std::size_t before = g_allocations;
      double sink = 0.0;
      for (int n : {max_batch, 1, 7})
        sink += m.loss_and_per_example_grads(
            p, BatchView{data.features.data(), 784, n, data.labels.data()}, g, per, *ws);
      CHECK(g_allocations - before == 0);
      CHECK(std::isfinite(sink));
    }
  }
}
