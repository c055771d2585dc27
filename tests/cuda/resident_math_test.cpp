// SPDX-License-Identifier: MIT
// The resident device backend's element math against the CPU algorithms' own code
// (weighted_sum for the mixing, LocalUpdate::step for the local update), no GPU needed.
#include "cuda/resident_math.hpp"
#include "resident_test_vectors.hpp"
#include "sim/core/rng.hpp"
#include "sim/engine/consensus_distance.hpp"
#include "sim/optimizers/d2.hpp"
#include "sim/optimizers/gossip_protocol.hpp"
#include "sim/optimizers/gradient_tracking.hpp"
#include "sim/optimizers/local_update.hpp"
#include "sim/optimizers/quasi_global.hpp"
#include "sim/optimizers/server_step.hpp"
#include "sim/optimizers/vector_ops.hpp"
#include "sim/optimizers/weighted_sum.hpp"

#include <algorithm>
#include <cmath>
#include <doctest/doctest.h>
#include <vector>

using namespace dtsim;
using namespace dtsim::cuda;
using dtsim::test::each_tile_on_host;
using dtsim::test::random_vector;
using dtsim::test::relative_error;

namespace {

// More than two of the CPU code's blocks (2,048); the last tile of 4 x 256 holds 100
// elements, so that most of its threads start past the row.
constexpr std::size_t kP = 4196;

// Node 1 mixing its own message (weight 0.6) with one input (0.4) at lr 0.05, from a model
// and a buffer drawn at random; node 0's rows are poisoned (-9) to catch a wrong row.
struct QuasiGlobalMixing {
  explicit QuasiGlobalMixing(std::uint64_t seed) {
    Rng rng = Rng::stream(seed, "test", Rng::kNoNode);
    own = random_vector(rng, kP);
    a = random_vector(rng, kP);
    x_before = random_vector(rng, kP);
    mhat_before = random_vector(rng, kP);
    self = {own.data()};
    in = {a.data()};
    std::copy(x_before.begin(), x_before.end(), models.begin() + kP);
    std::copy(mhat_before.begin(), mhat_before.end(), mhat.begin() + kP);
  }
  MixBatch batch(float mu) const {
    return {node.data(), self.data(), self_w.data(), first.data(),
            in.data(),   in_w.data(), lr.data(),     mu};
  }
  // The host's mixed model, block by block (GossipProtocol::mix's), into `then`'s x.
  template <class Then> void host_blocks(const Then& then) const {
    std::vector<float> mixed(GossipProtocol::kBlock);
    for (std::size_t f = 0; f < kP; f += GossipProtocol::kBlock) {
      const std::size_t len = std::min(GossipProtocol::kBlock, kP - f);
      weighted_sum(
          self_w[0], own.data() + f, in_w, [&](std::size_t) { return a.data() + f; }, len,
          mixed.data());
      then(f, len, mixed.data());
    }
  }
  std::vector<float> own, a, x_before, mhat_before;
  std::vector<int> node{1}, first{0, 1};
  std::vector<const float*> self, in;
  std::vector<float> self_w{0.6f}, in_w{0.4f}, lr{0.05f};
  std::vector<float> models = std::vector<float>(2 * kP, -9.0f);
  std::vector<float> mhat = std::vector<float>(2 * kP, -9.0f);
};

} // namespace

TEST_SUITE("cuda") {
  TEST_CASE("Resident math: the mixing kernel's elements equal the gossip mixing") {
    Rng rng = Rng::stream(3, "test", Rng::kNoNode);
    const int nodes = 3;
    std::vector<std::vector<float>> messages;
    for (int k = 0; k < 5; ++k)
      messages.push_back(random_vector(rng, kP));
    // Node 2 mixes its own message 0 with messages 3 and 1 (one pair of inputs); node 0
    // message 4 with 2, 3 and 1 (a pair and one more).
    const std::vector<int> node{2, 0};
    const std::vector<const float*> self{messages[0].data(), messages[4].data()};
    const std::vector<float> self_w{0.4f, 0.5f};
    const std::vector<int> first{0, 2, 5};
    const std::vector<const float*> in{messages[3].data(), messages[1].data(), messages[2].data(),
                                       messages[3].data(), messages[1].data()};
    const std::vector<float> in_w{0.35f, 0.25f, 0.2f, 0.2f, 0.1f};
    std::vector<float> models(nodes * kP, -9.0f);
    const MixBatch batch{node.data(),  self.data(), self_w.data(),
                         first.data(), in.data(),   in_w.data()};
    for (int b = 0; b < 2; ++b)
      each_tile_on_host<4>(kP, [&](std::size_t e0, std::size_t stride) {
        mix_tile<4>(batch, models.data(), nullptr, kP, b, e0, stride);
      });
    for (int b = 0; b < 2; ++b) {
      std::vector<float> expected(kP);
      const auto begin = static_cast<std::size_t>(first[static_cast<std::size_t>(b)]);
      const auto count = static_cast<std::size_t>(first[static_cast<std::size_t>(b) + 1]) - begin;
      for (std::size_t f = 0; f < kP; f += GossipProtocol::kBlock)
        weighted_sum(
            self_w[static_cast<std::size_t>(b)], self[static_cast<std::size_t>(b)] + f,
            std::span<const float>(in_w).subspan(begin, count),
            [&](std::size_t c) { return in[begin + c] + f; },
            std::min(GossipProtocol::kBlock, kP - f), expected.data() + f);
      const auto row = static_cast<std::size_t>(node[static_cast<std::size_t>(b)]) * kP;
      const std::vector<float> got(models.begin() + static_cast<std::ptrdiff_t>(row),
                                   models.begin() + static_cast<std::ptrdiff_t>(row + kP));
      CHECK(relative_error(got, expected) < 1e-6);
    }
    // Node 1 was not in the batch: untouched.
    CHECK(std::all_of(models.begin() + kP, models.begin() + 2 * kP,
                      [](float v) { return v == -9.0f; }));
  }

  TEST_CASE("Resident math: a quasi-global mixing refreshes the buffer as QG-DSGDm does") {
    QuasiGlobalMixing t(5);
    std::vector<float>&models = t.models, &mhat = t.mhat;
    const MixBatch batch = t.batch(0.9f);
    each_tile_on_host<4>(kP, [&](std::size_t e0, std::size_t stride) {
      mix_tile<4>(batch, models.data(), mhat.data(), kP, 0, e0, stride);
    });
    std::vector<float> x_cpu = t.x_before, mhat_cpu = t.mhat_before;
    t.host_blocks([&](std::size_t f, std::size_t len, const float* mixed) {
      quasi_global_refresh(0.9f, t.lr[0], x_cpu.data() + f, mixed, mhat_cpu.data() + f, len);
    });
    CHECK(relative_error({models.begin() + kP, models.end()}, x_cpu) < 1e-6);
    // (x - x_new) / lr cancels digits: the buffer's error is relative to its own scale.
    CHECK(relative_error({mhat.begin() + kP, mhat.end()}, mhat_cpu) < 1e-5);
    CHECK(std::all_of(models.begin(), models.begin() + kP, [](float v) { return v == -9.0f; }));
    CHECK(std::all_of(mhat.begin(), mhat.begin() + kP, [](float v) { return v == -9.0f; }));
  }

  TEST_CASE("Resident math: with a refresh period the mixing sums the displacement as QG-DSGDm") {
    // Three mixings of node 1 with L = 3: the first two add (x - x_new) / lr to v and leave
    // the buffer alone, the third (refresh_now) then sets mhat = mu mhat + ((1 - mu) / L) v
    // and v = 0, as quasi_global_accumulate and quasi_global_refresh_every.
    QuasiGlobalMixing t(13);
    std::vector<float>&models = t.models, &mhat = t.mhat;
    const std::vector<float>& mhat_before = t.mhat_before;
    constexpr float kMu = 0.9f;
    constexpr std::int64_t kPeriod = 3;
    std::vector<float> v(2 * kP, -9.0f);
    std::fill(v.begin() + kP, v.end(), 0.0f);
    std::vector<float> x_cpu = t.x_before, mhat_cpu = mhat_before, v_cpu(kP, 0.0f);
    for (int mixing = 1; mixing <= kPeriod; ++mixing) {
      CAPTURE(mixing);
      const std::vector<int> refresh_now{mixing == kPeriod ? 1 : 0};
      MixBatch batch = t.batch(kMu);
      batch.accumulate_rows = v.data();
      batch.refresh_now = refresh_now.data();
      batch.refresh_scale = (1 - kMu) / static_cast<float>(kPeriod);
      each_tile_on_host<4>(kP, [&](std::size_t e0, std::size_t stride) {
        mix_tile<4>(batch, models.data(), mhat.data(), kP, 0, e0, stride);
      });
      t.host_blocks([&](std::size_t f, std::size_t len, const float* mixed) {
        quasi_global_accumulate(t.lr[0], x_cpu.data() + f, mixed, v_cpu.data() + f, len);
      });
      if (mixing == kPeriod)
        quasi_global_refresh_every(kMu, kPeriod, mhat_cpu, v_cpu);
      CHECK(relative_error({models.begin() + kP, models.end()}, x_cpu) < 1e-6);
      CHECK(relative_error({mhat.begin() + kP, mhat.end()}, mhat_cpu) < 1e-5);
      if (mixing < kPeriod) {
        CHECK(std::equal(mhat.begin() + kP, mhat.end(), mhat_before.begin())); // left alone
        CHECK(relative_error({v.begin() + kP, v.end()}, v_cpu) < 1e-5);
      } else {
        CHECK(std::all_of(v.begin() + kP, v.end(), [](float e) { return e == 0.0f; }));
        CHECK(relative_error(mhat_cpu, mhat_before) > 1e-3); // the refresh is not lost
      }
    }
    CHECK(std::all_of(mhat.begin(), mhat.begin() + kP, [](float e) { return e == -9.0f; }));
    CHECK(std::all_of(v.begin(), v.begin() + kP, [](float e) { return e == -9.0f; }));
  }

  TEST_CASE("Resident math: gradient tracking's step and tracker mixing equal the method's") {
    // GradientTracking::track against tracking_step_tile, a first step and a later one,
    // without momentum, with heavy ball and weight decay, with Nesterov; then the tracker's
    // mixing (self the destination row, inputs at the messages' second vector) against the
    // gossip mixing.
    for (const ResidentVectors::LocalUpdateRule& rule :
         {ResidentVectors::LocalUpdateRule{0.0f, 0.0f, false, false, 0.0f, true, true},
          ResidentVectors::LocalUpdateRule{0.9f, 1e-3f, false, false, 0.0f, true, true},
          ResidentVectors::LocalUpdateRule{0.9f, 0.0f, true, false, 0.0f, true, true}}) {
      for (const int first : {1, 0}) {
        CAPTURE(rule.momentum);
        CAPTURE(first);
        Rng rng = Rng::stream(12, "test", Rng::kNoNode);
        // Node 1's rows of two; node 0's poisoned.
        std::vector<float> grads = random_vector(rng, 2 * kP), models = random_vector(rng, 2 * kP),
                           momenta = random_vector(rng, 2 * kP), y = random_vector(rng, 2 * kP),
                           g_prev = random_vector(rng, 2 * kP), out(2 * kP, -9.0f);
        std::vector<float> g_cpu(grads.begin() + kP, grads.end()),
            m_cpu(momenta.begin() + kP, momenta.end()), y_cpu(y.begin() + kP, y.end()),
            gp_cpu(g_prev.begin() + kP, g_prev.end()), u_cpu(kP);
        const std::vector<int> node{1}, firsts{first};
        float* out_ptr = out.data();
        const std::vector<float> lr{0.0f};
        const StepBatch batch{node.data(),       &out_ptr,      lr.data(), rule.momentum,
                              rule.weight_decay, rule.nesterov, false,     true};
        const RuleRows rows{y.data(), g_prev.data(), firsts.data()};
        each_tile_on_host<4>(kP, [&](std::size_t e0, std::size_t stride) {
          tracking_step_tile<4>(batch, rows, grads.data(), models.data(), momenta.data(), kP, 0, e0,
                                stride);
        });
        GradientTracking::track(
            rule, first == 1, g_cpu, std::span<const float>(models).subspan(kP), y_cpu, gp_cpu,
            rule.momentum > 0 ? std::span<float>(m_cpu) : std::span<float>(), u_cpu);
        const auto second = [](const std::vector<float>& v) {
          return std::vector<float>(v.begin() + kP, v.end());
        };
        CHECK(relative_error(second(grads), u_cpu) < 1e-6); // u in the gradient's row
        CHECK(relative_error(second(y), y_cpu) < 1e-6);
        CHECK(relative_error(second(g_prev), gp_cpu) < 1e-6);
        if (rule.momentum > 0)
          CHECK(relative_error(second(momenta), m_cpu) < 1e-6);
        // The message: (x, y).
        CHECK(std::vector<float>(out.begin(), out.begin() + kP) ==
              std::vector<float>(models.begin() + kP, models.end()));
        CHECK(relative_error(second(out), y_cpu) < 1e-6);
      }
    }
    // The tracker's mixing: y = 0.5 y + 0.25 m1[y] + 0.25 m2[y], the messages' second halves.
    Rng rng = Rng::stream(13, "test", Rng::kNoNode);
    const std::vector<float> m1 = random_vector(rng, 2 * kP), m2 = random_vector(rng, 2 * kP);
    std::vector<float> y = random_vector(rng, 2 * kP);
    const std::vector<float> y_before(y.begin() + kP, y.end());
    const std::vector<int> node{1}, first{0, 2};
    const float* poison = nullptr; // self comes from the destination row
    const std::vector<const float*> self{poison}, in{m1.data(), m2.data()};
    const std::vector<float> self_w{0.5f}, in_w{0.25f, 0.25f};
    MixBatch batch{node.data(), self.data(), self_w.data(), first.data(), in.data(), in_w.data()};
    batch.self_is_destination = true;
    batch.input_offset = kP;
    each_tile_on_host<4>(kP, [&](std::size_t e0, std::size_t stride) {
      mix_tile<4>(batch, y.data(), nullptr, kP, 0, e0, stride);
    });
    std::vector<float> y_cpu = y_before;
    weighted_sum_blocked(
        0.5f, y_cpu.data(), in_w,
        [&](std::size_t c) { return (c == 0 ? m1.data() : m2.data()) + kP; }, kP, y_cpu.data(),
        GossipProtocol::kBlock);
    CHECK(relative_error({y.begin() + kP, y.end()}, y_cpu) < 1e-6);
  }

  TEST_CASE("Resident math: D2's step equals D2::correct") {
    // A first step and a later one, with and without weight decay.
    for (const float weight_decay : {0.0f, 1e-3f}) {
      for (const int first : {1, 0}) {
        CAPTURE(weight_decay);
        CAPTURE(first);
        Rng rng = Rng::stream(14, "test", Rng::kNoNode);
        // Node 1's rows of two; node 0's poisoned.
        std::vector<float> grads = random_vector(rng, 2 * kP), models = random_vector(rng, 2 * kP),
                           x_prev = random_vector(rng, 2 * kP),
                           lr_g_prev = random_vector(rng, 2 * kP), out(kP, -9.0f);
        const auto second = [](const std::vector<float>& v) {
          return std::vector<float>(v.begin() + kP, v.end());
        };
        std::vector<float> g_cpu = second(grads), xp_cpu = second(x_prev),
                           gp_cpu = second(lr_g_prev), out_cpu(kP);
        const std::vector<int> node{1}, firsts{first};
        float* out_ptr = out.data();
        const std::vector<float> lr{0.05f};
        StepBatch batch{node.data(), &out_ptr, lr.data()};
        batch.weight_decay = weight_decay;
        const RuleRows rows{x_prev.data(), lr_g_prev.data(), firsts.data()};
        each_tile_on_host<4>(kP, [&](std::size_t e0, std::size_t stride) {
          d2_step_tile<4>(batch, rows, grads.data(), models.data(), kP, 0, e0, stride);
        });
        D2::correct(first == 1, weight_decay, lr[0], g_cpu,
                    std::span<const float>(models).subspan(kP), xp_cpu, gp_cpu, out_cpu);
        CHECK(relative_error(out, out_cpu) < 1e-6);
        CHECK(second(x_prev) == xp_cpu);
        CHECK(relative_error(second(lr_g_prev), gp_cpu) < 1e-6);
      }
    }
  }

  TEST_CASE("Resident math: a DecentLaM mixing applies the momentum as DecentLam does") {
    Rng rng = Rng::stream(15, "test", Rng::kNoNode);
    const std::vector<float> own = random_vector(rng, kP), a = random_vector(rng, kP),
                             x_before = random_vector(rng, kP), m_before = random_vector(rng, kP);
    const std::vector<int> node{1}, first{0, 1};
    const std::vector<const float*> self{own.data()}, in{a.data()};
    const std::vector<float> self_w{0.6f}, in_w{0.4f}, lr{0.05f};
    // Node 1's rows; node 0's are poisoned to catch a wrong row.
    std::vector<float> models(2 * kP, -9.0f), momenta(2 * kP, -9.0f);
    std::copy(x_before.begin(), x_before.end(), models.begin() + kP);
    std::copy(m_before.begin(), m_before.end(), momenta.begin() + kP);
    MixBatch batch{node.data(), self.data(), self_w.data(), first.data(),
                   in.data(),   in_w.data(), lr.data(),     0.9f};
    batch.decentlam = true;
    each_tile_on_host<4>(kP, [&](std::size_t e0, std::size_t stride) {
      mix_tile<4>(batch, models.data(), momenta.data(), kP, 0, e0, stride);
    });
    std::vector<float> x_cpu = x_before, m_cpu = m_before, mixed(GossipProtocol::kBlock);
    for (std::size_t f = 0; f < kP; f += GossipProtocol::kBlock) {
      const std::size_t len = std::min(GossipProtocol::kBlock, kP - f);
      weighted_sum(
          self_w[0], own.data() + f, in_w, [&](std::size_t) { return a.data() + f; }, len,
          mixed.data());
      decentlam_momentum(0.9f, lr[0], x_cpu.data() + f, mixed.data(), m_cpu.data() + f, len);
    }
    // (x - x_new) / lr cancels digits: each vector's error is relative to its own scale.
    CHECK(relative_error({models.begin() + kP, models.end()}, x_cpu) < 1e-5);
    CHECK(relative_error({momenta.begin() + kP, momenta.end()}, m_cpu) < 1e-5);
    CHECK(std::all_of(models.begin(), models.begin() + kP, [](float v) { return v == -9.0f; }));
  }

  TEST_CASE("Resident math: combine-then-adapt keeps u and mixes the model itself") {
    for (const ResidentVectors::LocalUpdateRule& rule :
         {ResidentVectors::LocalUpdateRule{0.0f, 0.0f, false, false, 0.0f, true},
          ResidentVectors::LocalUpdateRule{0.9f, 1e-3f, true, false, 0.0f, true},
          ResidentVectors::LocalUpdateRule{0.9f, 0.0f, false, false, 0.0f, true}}) {
      CAPTURE(rule.momentum);
      CAPTURE(rule.nesterov);
      Rng rng = Rng::stream(6, "test", Rng::kNoNode);
      // Node 1 of 2: the local step keeps u in the gradient's row and sends x ...
      std::vector<float> grads = random_vector(rng, 2 * kP), models = random_vector(rng, 2 * kP),
                         momenta = random_vector(rng, 2 * kP), out(kP, -9.0f);
      std::vector<float> u_cpu(grads.begin() + kP, grads.end()),
          m_cpu(momenta.begin() + kP, momenta.end());
      const std::vector<float> x(models.begin() + kP, models.end());
      const std::vector<int> node{1};
      float* out_ptr = out.data();
      const std::vector<float> lr{0.05f};
      const StepBatch step{node.data(),       &out_ptr,      lr.data(),         rule.momentum,
                           rule.weight_decay, rule.nesterov, rule.quasi_global, true};
      each_tile_on_host<4>(kP, [&](std::size_t e0, std::size_t stride) {
        local_step_tile<4>(step, grads.data(), models.data(), momenta.data(), kP, 0, e0, stride);
      });
      LocalUpdate::direction(
          rule, u_cpu, x, rule.momentum > 0 ? std::span<float>(m_cpu) : std::span<float>(), u_cpu);
      CHECK(relative_error({grads.begin() + kP, grads.end()}, u_cpu) < 1e-6);
      CHECK(out == x);
      if (rule.momentum > 0)
        CHECK(relative_error({momenta.begin() + kP, momenta.end()}, m_cpu) < 1e-6);
      // ... and the mixing takes the model itself as self, then subtracts lr u.
      const std::vector<float> a = random_vector(rng, kP);
      const std::vector<const float*> self{models.data() + kP}, in{a.data()};
      const std::vector<int> first{0, 1};
      const std::vector<float> self_w{0.7f}, in_w{0.3f};
      const MixBatch mix{node.data(), self.data(), self_w.data(), first.data(), in.data(),
                         in_w.data(), nullptr,     0.0f,          lr.data(),    grads.data()};
      each_tile_on_host<4>(kP, [&](std::size_t e0, std::size_t stride) {
        mix_tile<4>(mix, models.data(), nullptr, kP, 0, e0, stride);
      });
      std::vector<float> x_cpu = x;
      weighted_sum_blocked(
          self_w[0], x_cpu.data(), in_w, [&](std::size_t) { return a.data(); }, kP, x_cpu.data(),
          GossipProtocol::kBlock);
      for (std::size_t e = 0; e < kP; ++e)
        x_cpu[e] -= lr[0] * u_cpu[e];
      CHECK(relative_error({models.begin() + kP, models.end()}, x_cpu) < 1e-6);
    }
  }

  TEST_CASE("Resident math: the local-step kernel's elements equal LocalUpdate::step") {
    struct Rule {
      float momentum, weight_decay;
      bool nesterov, quasi_global;
    };
    for (const Rule& r : {Rule{0.0f, 0.0f, false, false}, Rule{0.9f, 0.0f, false, false},
                          Rule{0.9f, 1e-3f, true, false}, Rule{0.0f, 1e-3f, false, false},
                          Rule{0.9f, 1e-3f, false, true}, Rule{0.9f, 1e-3f, true, true}}) {
      CAPTURE(r.momentum);
      CAPTURE(r.nesterov);
      CAPTURE(r.quasi_global);
      Rng rng = Rng::stream(4, "test", Rng::kNoNode);
      const int nodes = 2;
      std::vector<float> grads = random_vector(rng, nodes * kP);
      std::vector<float> models = random_vector(rng, nodes * kP);
      std::vector<float> momenta = random_vector(rng, nodes * kP);
      const std::vector<float> momenta_before = momenta;
      std::vector<float> out(kP, -9.0f);
      const std::vector<int> node{1};
      float* out_ptr = out.data();
      const std::vector<float> lr{0.05f};
      const StepBatch batch{node.data(),    &out_ptr,   lr.data(),     r.momentum,
                            r.weight_decay, r.nesterov, r.quasi_global};
      std::vector<float> m_cpu(momenta.begin() + kP, momenta.end()), out_cpu(kP);
      each_tile_on_host<4>(kP, [&](std::size_t e0, std::size_t stride) {
        local_step_tile<4>(batch, grads.data(), models.data(), momenta.data(), kP, 0, e0, stride);
      });
      LocalUpdate::step({r.momentum, r.weight_decay, r.nesterov, r.quasi_global, 0.0f},
                        std::span<const float>(grads).subspan(kP),
                        std::span<const float>(models).subspan(kP), 0.05f,
                        r.momentum > 0 ? std::span<float>(m_cpu) : std::span<float>(), out_cpu);
      CHECK(relative_error(out, out_cpu) < 1e-6);
      if (r.momentum > 0) {
        const std::vector<float> m_kernel(momenta.begin() + kP, momenta.end());
        CHECK(relative_error(m_kernel, m_cpu) < 1e-6);
        if (r.quasi_global) // the buffer is only read
          CHECK(m_kernel == std::vector<float>(momenta_before.begin() + kP, momenta_before.end()));
      }
    }
  }

  TEST_CASE("Resident math: the pairwise and server steps' elements equal apply_vector_op") {
    Rng rng = Rng::stream(7, "test", Rng::kNoNode);
    const std::vector<float> a = random_vector(rng, kP), d0 = random_vector(rng, kP);
    std::vector<float> b = random_vector(rng, kP);
    for (const VectorOp op : {VectorOp::copy, VectorOp::average, VectorOp::add_half_difference,
                              VectorOp::subtract_scaled, VectorOp::add, VectorOp::divide,
                              VectorOp::zero, VectorOp::subtract, VectorOp::average_less,
                              VectorOp::average_step_less, VectorOp::average_step_add}) {
      CAPTURE(static_cast<int>(op));
      std::vector<float> kernel = d0, host = d0;
      each_tile_on_host<4>(kP, [&](std::size_t e0, std::size_t stride) {
        vector_op_tile<4>(op, kernel.data(), a.data(), b.data(), 0.05f, 0.0f, 0.0f, kP, e0, stride);
      });
      apply_vector_op(op, host, a, b, 0.05f);
      if (op == VectorOp::zero)
        CHECK((kernel == host && host == std::vector<float>(kP, 0.0f)));
      else
        CHECK(relative_error(kernel, host) < 1e-6);
    }
    // In place (dst = a), as AD-PSGD averages its live model.
    std::vector<float> kernel = d0, host = d0;
    each_tile_on_host<4>(kP, [&](std::size_t e0, std::size_t stride) {
      vector_op_tile<4>(VectorOp::average, kernel.data(), kernel.data(), b.data(), 0.0f, 0.0f, 0.0f,
                        kP, e0, stride);
    });
    apply_vector_op(VectorOp::average, host, host, b, 0.0f);
    CHECK(relative_error(kernel, host) < 1e-6);
  }

  TEST_CASE("Resident math: the delay compensation's elements equal apply_vector_op") {
    // DC-ASGD's constant form: g += lambda g.*g.*(w - w_bak), the gradient row in place.
    Rng rng = Rng::stream(10, "test", Rng::kNoNode);
    const std::vector<float> w = random_vector(rng, kP), g = random_vector(rng, kP);
    std::vector<float> bak = random_vector(rng, kP);
    std::vector<float> kernel = g, host = g;
    each_tile_on_host<4>(kP, [&](std::size_t e0, std::size_t stride) {
      vector_op_tile<4>(VectorOp::delay_compensate, kernel.data(), w.data(), bak.data(), 0.5f, 0.0f,
                        0.0f, kP, e0, stride);
    });
    apply_vector_op(VectorOp::delay_compensate, host, w, bak, 0.5f);
    CHECK(relative_error(kernel, host) < 1e-6);
    CHECK(relative_error(kernel, g) > 1e-3); // the compensation is not lost
  }

  TEST_CASE("Resident math: the adaptive delay compensation's elements equal apply_vector_op") {
    // MS = decay MS + (1 - decay) g.*g, then g += lambda / sqrt(MS + eps) .* g.*g .* (w - bak)
    // (IEEE square roots and divisions on both; the host's library may fuse a multiply-add).
    Rng rng = Rng::stream(12, "test", Rng::kNoNode);
    const std::vector<float> g0 = random_vector(rng, kP), difference = random_vector(rng, kP);
    std::vector<float> ms0 = random_vector(rng, kP);
    for (float& v : ms0)
      v = v * v;
    std::vector<float> ms_kernel = ms0, ms_host = ms0, kernel = g0, host = g0;
    each_tile_on_host<4>(kP, [&](std::size_t e0, std::size_t stride) {
      vector_op_tile<4>(VectorOp::mean_square, ms_kernel.data(), g0.data(), nullptr, 0.95f, 0.05f,
                        0.0f, kP, e0, stride);
    });
    apply_vector_op(VectorOp::mean_square, ms_host, g0, {}, 0.95f, 0.05f);
    CHECK(ms_kernel == ms_host);
    CHECK(relative_error(ms_host, ms0) > 1e-3);
    each_tile_on_host<4>(kP, [&](std::size_t e0, std::size_t stride) {
      vector_op_tile<4>(VectorOp::delay_compensate_adaptive, kernel.data(), ms_host.data(),
                        const_cast<float*>(difference.data()), 2.0f, 1e-7f, 0.0f, kP, e0, stride);
    });
    apply_vector_op(VectorOp::delay_compensate_adaptive, host, ms_host, difference, 2.0f, 1e-7f);
    CHECK(relative_error(kernel, host) < 1e-6);
    CHECK(relative_error(host, g0) > 1e-3);
  }

  TEST_CASE("Resident math: the server sum's steps are vector_ops.hpp's bits") {
    // GSGM's running sum in double: rows added and removed, then the mean rounded to float;
    // the same IEEE operations per element as accumulate_rows and mean_of_sum.
    Rng rng = Rng::stream(11, "test", Rng::kNoNode);
    const std::vector<float> a = random_vector(rng, kP), b = random_vector(rng, kP);
    std::vector<double> kernel(kP, 0.0);
    Eigen::VectorXd host = Eigen::VectorXd::Zero(kP);
    const auto step = [&](VectorOp op, const std::vector<float>& row, float s, float* out) {
      each_tile_on_host<4>(kP, [&](std::size_t e0, std::size_t stride) {
        sum_tile<4>(op, kernel.data(), out, row.data(), s, kP, e0, stride);
      });
    };
    step(VectorOp::accumulate, a, 1.0f, nullptr);
    step(VectorOp::accumulate, b, 1.0f, nullptr);
    step(VectorOp::accumulate, a, -1.0f, nullptr);
    accumulate_rows(host, a, true);
    accumulate_rows(host, b, true);
    accumulate_rows(host, a, false);
    CHECK(std::equal(kernel.begin(), kernel.end(), host.data()));
    step(VectorOp::accumulate, b, 1.0f, nullptr);
    accumulate_rows(host, b, true);
    std::vector<float> mean_kernel(kP), mean_host(kP);
    step(VectorOp::mean_of_sum, {}, 3.0f, mean_kernel.data());
    mean_of_sum(mean_host, host, 3.0);
    CHECK(mean_kernel == mean_host);
    CHECK(mean_kernel != std::vector<float>(kP, 0.0f));
  }

  TEST_CASE("Resident math: the server step's elements equal server_step") {
    // ASGD's step: with server momentum (and weight decay), weight decay alone, neither.
    struct Rule {
      float momentum, weight_decay;
    };
    for (const Rule r :
         {Rule{0.9f, 1e-3f}, Rule{0.9f, 0.0f}, Rule{0.0f, 1e-3f}, Rule{0.0f, 0.0f}}) {
      CAPTURE(r.momentum);
      CAPTURE(r.weight_decay);
      Rng rng = Rng::stream(9, "test", Rng::kNoNode);
      const std::vector<float> g = random_vector(rng, kP);
      std::vector<float> w = random_vector(rng, kP), m = random_vector(rng, kP);
      Vec w_host = as_vec(std::span<const float>(w)), m_host = as_vec(std::span<const float>(m));
      each_tile_on_host<4>(kP, [&](std::size_t e0, std::size_t stride) {
        vector_op_tile<4>(VectorOp::server_step, w.data(), g.data(), m.data(), 0.05f, r.momentum,
                          r.weight_decay, kP, e0, stride);
      });
      server_step(w_host, m_host, as_vec(std::span<const float>(g)), 0.05f, r.momentum,
                  r.weight_decay);
      CHECK(relative_error(w, {w_host.data(), w_host.data() + kP}) < 1e-6);
      CHECK(relative_error(m, {m_host.data(), m_host.data() + kP}) < 1e-6);
    }
  }

  TEST_CASE("Resident math: the rows' mean is mean_of_columns' bits") {
    // The same additions in node order and one division per element: the evaluation model
    // of a resident run is the host's, bit for bit.
    Rng rng = Rng::stream(8, "test", Rng::kNoNode);
    const int nodes = 5;
    const std::vector<float> rows = random_vector(rng, nodes * kP);
    const Eigen::Map<const Eigen::MatrixXf> columns(rows.data(), kP, nodes);
    std::vector<float> host(kP), kernel(kP);
    mean_of_columns(columns, host);
    for (std::size_t e = 0; e < kP; ++e)
      kernel[e] = mean_of_rows_element(rows.data(), nodes, kP, e);
    CHECK(kernel == host);
  }

  TEST_CASE("Resident math: the consensus distance's partial sums give the host's distance") {
    // The device kernel's per-node reduction: thread t's partial over a strided row, then a
    // tree over the block; here on the host, against consensus_distance.hpp.
    Rng rng = Rng::stream(9, "test", Rng::kNoNode);
    const int nodes = 6, threads = kDistanceThreads;
    const std::vector<float> rows = random_vector(rng, nodes * kP);
    const Eigen::MatrixXf columns = Eigen::Map<const Eigen::MatrixXf>(rows.data(), kP, nodes);
    Vec host_mean;
    const double host = consensus_distance(columns, host_mean);
    std::vector<float> mean(kP);
    for (std::size_t e = 0; e < kP; ++e)
      mean[e] = mean_of_rows_element(rows.data(), nodes, kP, e);
    double sum = 0;
    for (int node = 0; node < nodes; ++node) {
      std::vector<double> part(threads);
      for (int t = 0; t < threads; ++t)
        part[static_cast<std::size_t>(t)] = squared_distance_partial(
            rows.data() + static_cast<std::size_t>(node) * kP, mean.data(), kP, t, threads);
      for (int width = threads / 2; width > 0; width /= 2)
        for (int t = 0; t < width; ++t)
          part[static_cast<std::size_t>(t)] += part[static_cast<std::size_t>(t + width)];
      sum += part[0];
    }
    const double device = sum / nodes;
    CHECK(host > 0);
    CHECK(std::abs(device - host) <= 1e-6 * host);
  }
}
