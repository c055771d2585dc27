// SPDX-License-Identifier: MIT
// The resident tiles that load their rows before storing write the bits of the element-by-
// element code they replaced (kept here as the reference): reordering loads and stores must
// not change any element's arithmetic (bit for bit: built without fused multiply-adds, which
// a compiler may place differently in two forms of one expression).
#include "cuda/resident_math.hpp"
#include "resident_test_vectors.hpp"
#include "sim/core/rng.hpp"

#include <doctest/doctest.h>
#include <vector>

using namespace dtsim;
using namespace dtsim::cuda;
using dtsim::test::each_tile_on_host;
using dtsim::test::random_vector;

namespace {

constexpr std::size_t kP = 1100; // one tile of 4 x 256 and a partial one

// local_step_tile's element e before the change (commit 8d72e73), loads and stores
// interleaved.
void interleaved_local_step(const StepBatch& s, float* grads, const float* models, float* momenta,
                            std::size_t P, int b, std::size_t e) {
  const std::size_t row = static_cast<std::size_t>(s.node[b]) * P;
  float* g_row = grads + row;
  const float* x_row = models + row;
  float* m_row = s.momentum != 0 ? momenta + row : nullptr;
  float* out = s.out[b];
  const float lr = s.lr[b];
  const float g = g_row[e], x = x_row[e];
  if (s.combine_then_adapt) {
    float u = s.weight_decay > 0 ? g + s.weight_decay * x : g;
    if (m_row) {
      const float m = s.momentum * m_row[e] + u;
      m_row[e] = m;
      u = s.nesterov ? u + s.momentum * m : m;
    }
    g_row[e] = u;
    if (out)
      out[e] = x;
    return;
  }
  float u = g + s.weight_decay * x;
  if (m_row) {
    const float m = s.momentum * m_row[e] + g + s.weight_decay * x;
    if (!s.quasi_global)
      m_row[e] = m;
    u = s.nesterov ? g + s.weight_decay * x + s.momentum * m : m;
  }
  out[e] = x - lr * u;
}

// mix_tile's element e before the change: the mixed value v, then the refresh of the
// quasi-global buffer or the subtraction of lr u, then the store.
void interleaved_mix_tail(const MixBatch& m, float* models, float* mhat, std::size_t P, int b,
                          std::size_t e, float v) {
  const std::size_t row = static_cast<std::size_t>(m.node[b]) * P;
  float* x = models + row;
  const float refresh_lr = m.refresh_lr ? m.refresh_lr[b] : 0.0f;
  const float subtract_lr = m.subtract_lr ? m.subtract_lr[b] : 0.0f;
  if (m.refresh_lr)
    mhat[row + e] = m.mu * mhat[row + e] + (1 - m.mu) * ((x[e] - v) / refresh_lr);
  if (m.subtract_lr)
    v = v - subtract_lr * m.u_rows[row + e];
  x[e] = v;
}

} // namespace

TEST_SUITE("cuda") {
  TEST_CASE("Resident tiles: the mixing's inputs taken in pairs write the one-by-one bits") {
    Rng rng = Rng::stream(13, "test", Rng::kNoNode);
    const std::vector<float> own = random_vector(rng, kP), a = random_vector(rng, kP),
                             b = random_vector(rng, kP), c = random_vector(rng, kP);
    for (int inputs = 1; inputs <= 3; ++inputs) { // a pair, a single one, or both
      CAPTURE(inputs);
      const std::vector<int> node{0}, first{0, inputs};
      const std::vector<const float*> self{own.data()}, in{a.data(), b.data(), c.data()};
      const std::vector<float> self_w{0.4f}, in_w{0.3f, 0.2f, 0.1f};
      const MixBatch batch{node.data(),  self.data(), self_w.data(),
                           first.data(), in.data(),   in_w.data()};
      std::vector<float> models(kP);
      each_tile_on_host<4>(kP, [&](std::size_t e0, std::size_t stride) {
        mix_tile<4>(batch, models.data(), nullptr, kP, 0, e0, stride);
      });
      std::vector<float> expected(kP); // the loop before (commit 9c7f4b5): one input at a time
      for (std::size_t e = 0; e < kP; ++e) {
        float v = self_w[0] * own[e];
        for (int k = 0; k < inputs; ++k)
          v += in_w[static_cast<std::size_t>(k)] * in[static_cast<std::size_t>(k)][e];
        expected[e] = v;
      }
      CHECK(models == expected);
      // The plain mixing's own kernel (plain_mix_tile) likewise.
      std::vector<float> plain(kP);
      each_tile_on_host<4>(kP, [&](std::size_t e0, std::size_t stride) {
        plain_mix_tile<4>(batch, plain.data(), kP, 0, e0, stride);
      });
      CHECK(plain == expected);
    }
  }

  TEST_CASE("Resident tiles: the local step's tile writes the element-by-element bits") {
    struct Rule {
      float momentum, weight_decay;
      bool nesterov, quasi_global, combine_then_adapt;
    };
    for (const Rule& r :
         {Rule{0, 0, false, false, false}, Rule{0.9f, 0, false, false, false},
          Rule{0.9f, 1e-3f, true, false, false}, Rule{0, 1e-3f, false, false, false},
          Rule{0.9f, 1e-3f, false, true, false}, Rule{0.9f, 1e-3f, true, true, false},
          Rule{0, 0, false, false, true}, Rule{0.9f, 1e-3f, true, false, true}}) {
      CAPTURE(r.momentum);
      CAPTURE(r.quasi_global);
      CAPTURE(r.combine_then_adapt);
      Rng rng = Rng::stream(11, "test", Rng::kNoNode);
      const std::vector<float> grads0 = random_vector(rng, 2 * kP),
                               models = random_vector(rng, 2 * kP),
                               momenta0 = random_vector(rng, 2 * kP);
      std::vector<float> grads = grads0, momenta = momenta0, out(kP, -9.0f);
      std::vector<float> grads_ref = grads0, momenta_ref = momenta0, out_ref(kP, -9.0f);
      const std::vector<int> node{1};
      const std::vector<float> lr{0.05f};
      float* out_ptr = out.data();
      float* out_ref_ptr = out_ref.data();
      const StepBatch batch{node.data(),    &out_ptr,   lr.data(),      r.momentum,
                            r.weight_decay, r.nesterov, r.quasi_global, r.combine_then_adapt};
      StepBatch reference = batch;
      reference.out = &out_ref_ptr;
      each_tile_on_host<4>(kP, [&](std::size_t e0, std::size_t stride) {
        local_step_tile<4>(batch, grads.data(), models.data(), momenta.data(), kP, 0, e0, stride);
      });
      for (std::size_t e = 0; e < kP; ++e)
        interleaved_local_step(reference, grads_ref.data(), models.data(), momenta_ref.data(), kP,
                               0, e);
      CHECK(out == out_ref);
      CHECK(grads == grads_ref);
      CHECK(momenta == momenta_ref);
    }
  }

  TEST_CASE("Resident tiles: the mixing's tile writes the element-by-element bits") {
    // A quasi-global refresh and a combine-then-adapt subtraction.
    for (int kind = 0; kind < 2; ++kind) {
      CAPTURE(kind);
      Rng rng = Rng::stream(12, "test", Rng::kNoNode);
      const std::vector<float> own = random_vector(rng, kP), a = random_vector(rng, kP),
                               u_rows = random_vector(rng, 2 * kP),
                               models0 = random_vector(rng, 2 * kP),
                               mhat0 = random_vector(rng, 2 * kP);
      const std::vector<int> node{1}, first{0, 1};
      const std::vector<const float*> self{own.data()}, in{a.data()};
      const std::vector<float> self_w{0.6f}, in_w{0.4f}, lr{0.05f};
      MixBatch batch{node.data(), self.data(), self_w.data(), first.data(), in.data(), in_w.data()};
      if (kind == 0) {
        batch.refresh_lr = lr.data();
        batch.mu = 0.9f;
      } else {
        batch.subtract_lr = lr.data();
        batch.u_rows = u_rows.data();
      }
      std::vector<float> models = models0, mhat = mhat0, models_ref = models0, mhat_ref = mhat0;
      each_tile_on_host<4>(kP, [&](std::size_t e0, std::size_t stride) {
        mix_tile<4>(batch, models.data(), mhat.data(), kP, 0, e0, stride);
      });
      // The mixed values v, from the plain mixing (the part the change left alone).
      MixBatch plain = batch;
      plain.refresh_lr = plain.subtract_lr = nullptr;
      std::vector<float> mixed = models0;
      each_tile_on_host<4>(kP, [&](std::size_t e0, std::size_t stride) {
        mix_tile<4>(plain, mixed.data(), nullptr, kP, 0, e0, stride);
      });
      for (std::size_t e = 0; e < kP; ++e)
        interleaved_mix_tail(batch, models_ref.data(), mhat_ref.data(), kP, 0, e, mixed[kP + e]);
      CHECK(models == models_ref);
      CHECK(mhat == mhat_ref);
    }
  }
}
