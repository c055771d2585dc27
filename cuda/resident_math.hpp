// SPDX-License-Identifier: MIT
// The resident device backend's vector math (ResidentVectors on the device), a tile of a
// node's elements at a time: the gossip mixing into a node's model, the local update writing
// the node's message, and the element-wise steps of pairwise methods (apply). Shared by the
// device kernels (device_resident_store.cuh) and the host tests, which compare them with the
// CPU algorithms' weighted_sum, LocalUpdate::step and apply_vector_op.
#pragma once

#include "cuda/mlp_batch_math.hpp"
#include "sim/engine/resident_vectors.hpp"

#include <cfloat>
#include <cmath>
#include <cstddef>
#include <cstdint>
#include <cstring>

// Unrolls a tile's loop over its J elements on the device, so that the per-element values
// stay in registers (the host compilers, nvcc's host pass included, take the loops as they
// are).
#if defined(__CUDA_ARCH__)
#define DTSIM_UNROLL _Pragma("unroll")
#else
#define DTSIM_UNROLL
#endif

namespace dtsim::cuda {

// CHOCO-SGD's own rows (the choco rule's, nodes x P each) and its consensus step.
struct ChocoRows {
  float* x_half = nullptr;
  float* xhat = nullptr;
  float* s = nullptr;
  float gamma = 0;
  bool adapt_then_combine = true;
};

// One element of CHOCO-SGD's mixing end (ChocoSgd::consensus): s += mixed, then
// x = x_half + gamma (s - xhat) (adapt-then-combine) or x = x_half.
DTSIM_HD inline void choco_consensus_element(const ChocoRows& c, float mixed, float s_old,
                                             float x_half, float xhat, float* s, float* x) {
  const float s_new = s_old + mixed;
  *s = s_new;
  *x = c.adapt_then_combine ? x_half + c.gamma * (s_new - xhat) : x_half;
}

// The mixings of a batch: entry b sets model node[b] (rows of P floats in `models`) to
// x_new = self_w[b] * self[b] + sum over c in [first[b], first[b + 1]) of in_w[c] * in[c],
// summed in c order (the order of the node's in-neighbours). With `refresh_lr` (a
// quasi-global rule), first the node's buffer (rows of `mhat`) takes
// mu mhat + (1 - mu) (x - x_new) / refresh_lr[b], x the model before (with a refresh period,
// accumulate_rows below; DecentLaM's momentum likewise, `decentlam`). With `subtract_lr`
// (combine-then-adapt, self[b] being the model itself), x_new - subtract_lr[b] * u is
// written instead, u the node's row of `u_rows` (its kept direction).
struct MixBatch {
  const int* node = nullptr;
  const float* const* self = nullptr;
  const float* self_w = nullptr;
  const int* first = nullptr; // count + 1 entries
  const float* const* in = nullptr;
  const float* in_w = nullptr;
  const float* refresh_lr = nullptr; // null: no refresh
  float mu = 0;
  const float* subtract_lr = nullptr; // null: nothing subtracted
  const float* u_rows = nullptr;
  // Gradient tracking's second mixing: self is the entry's own destination row (its tracker)
  // and every input is read from this offset (the messages' second vector; so is self when
  // it is not the destination: momentum tracking's second mixing).
  bool self_is_destination = false;
  std::size_t input_offset = 0;
  // Momentum tracking's second mixing: the entry's row of add_rows (its momentum) is added
  // to the mix.
  const float* add_rows = nullptr;
  // DecentLaM: with refresh_lr, the buffer is a momentum on the displacement,
  // m = mu m + (x - x_new) / lr, and x = x - lr m (quasi_global_refresh's sibling).
  bool decentlam = false;
  // A quasi-global rule with a refresh period L > 1 (quasi_global_accumulate): with
  // refresh_lr, the displacement is added to the entry's row of accumulate_rows (v) and the
  // buffer left alone; where refresh_now[b], then m = mu m + refresh_scale v and v = 0
  // (quasi_global_refresh_every, refresh_scale = (1 - mu) / L).
  float* accumulate_rows = nullptr;
  const int* refresh_now = nullptr;
  float refresh_scale = 0;
  // CHOCO-SGD (self and inputs the messages q): the sum is not the model but the mixed q,
  // which choco_consensus_element adds to s before it writes the model.
  bool choco = false;
  ChocoRows choco_rows = {};
};

// Entry b's mixed sums self_w[b] * self[e] + sum over c in [first[b], first[b + 1]) of
// in_w[c] * in[c][e], summed in c order, for the J elements where at(j, e) is true (it sets
// e; v[j] = 0 elsewhere). The one expression of every plain mixing (mix_tile's, and the first
// layer's mixing in its forward pass, mixed_first_layer.hpp), so that both write the same
// bits.
template <int J, class At>
DTSIM_HD inline void mix_sums(const MixBatch& m, const float* self, int b, At at, float (&v)[J]) {
  const float self_w = m.self_w[b];
  DTSIM_UNROLL
  for (int j = 0; j < J; ++j) {
    std::size_t e = 0;
    v[j] = at(j, e) ? self_w * self[e] : 0.0f;
  }
  // The inputs two at a time, both loaded before either is added (the sums in the same
  // order): a thread then waits for memory once per pair, not once per input.
  const int end = m.first[b + 1];
  int c = m.first[b];
  for (; c + 1 < end; c += 2) {
    const float* in0 = m.in[c] + m.input_offset;
    const float* in1 = m.in[c + 1] + m.input_offset;
    const float w0 = m.in_w[c], w1 = m.in_w[c + 1];
    float a0[J], a1[J];
    DTSIM_UNROLL
    for (int j = 0; j < J; ++j) {
      std::size_t e = 0;
      const bool valid = at(j, e);
      a0[j] = valid ? in0[e] : 0.0f;
      a1[j] = valid ? in1[e] : 0.0f;
    }
    DTSIM_UNROLL
    for (int j = 0; j < J; ++j) {
      v[j] += w0 * a0[j];
      v[j] += w1 * a1[j];
    }
  }
  if (c < end) {
    const float* in = m.in[c] + m.input_offset;
    const float w = m.in_w[c];
    DTSIM_UNROLL
    for (int j = 0; j < J; ++j) {
      std::size_t e = 0;
      if (at(j, e))
        v[j] += w * in[e];
    }
  }
}

// A tile's values v into row x (x[e0 + j * stride] for the j whose element is below P).
template <int J>
DTSIM_HD inline void store_tile(float* x, std::size_t P, std::size_t e0, std::size_t stride,
                                const float (&v)[J]) {
  DTSIM_UNROLL
  for (int j = 0; j < J; ++j) {
    const std::size_t e = e0 + static_cast<std::size_t>(j) * stride;
    if (e >= P)
      break;
    x[e] = v[j];
  }
}

// Entry b's mixed sums of a tile (mix_sums over its elements below P) into v; returns the
// start of the entry's row (its node's) in rows of P floats.
template <int J>
DTSIM_HD inline std::size_t mix_tile_sums(const MixBatch& m, const float* models, std::size_t P,
                                          int b, std::size_t e0, std::size_t stride,
                                          float (&v)[J]) {
  const std::size_t row = static_cast<std::size_t>(m.node[b]) * P;
  const float* self = m.self_is_destination ? models + row : m.self[b] + m.input_offset;
  mix_sums<J>(
      m, self, b,
      [=](int j, std::size_t& e) {
        e = e0 + static_cast<std::size_t>(j) * stride;
        return e < P;
      },
      v);
  return row;
}

// The plain mixing's tile (MixBatch without a refresh, a subtraction, an added row or
// CHOCO-SGD, whose fields it leaves unread): mix_tile's plain case, for a kernel of its own.
// mix_tile's every case in one kernel takes 44 to 48 registers a thread on sm_90, this one
// 32, so that an SM holds as many threads, and their loads, as it can (89% of the warps
// active against 55% on an H100: run 24 of docs/cuda.md).
template <int J>
DTSIM_HD inline void plain_mix_tile(const MixBatch& m, float* models, std::size_t P, int b,
                                    std::size_t e0, std::size_t stride) {
  float v[J];
  store_tile<J>(models + mix_tile_sums<J>(m, models, P, b, e0, stride, v), P, e0, stride, v);
}

// A tile of batch entry b's elements: e = e0 + j * stride for j < J (those below P). The
// per-entry plan (row, weights, input pointers) is read once per tile, not once per element:
// an element kernel that reads it per element spends more instructions on the plan than on
// the vectors it streams. Per element the operations and their order do not depend on J.
template <int J>
DTSIM_HD inline void mix_tile(const MixBatch& m, float* models, float* mhat, std::size_t P, int b,
                              std::size_t e0, std::size_t stride) {
  float v[J];
  const std::size_t row = mix_tile_sums<J>(m, models, P, b, e0, stride, v);
  float* x = models + row;
  if (m.choco) { // every row's element loaded before the first store (local_step_tile's why)
    const ChocoRows& rows = m.choco_rows;
    float s_old[J], half[J], xhat[J];
    DTSIM_UNROLL
    for (int j = 0; j < J; ++j) {
      const std::size_t e = e0 + static_cast<std::size_t>(j) * stride;
      const bool in_row = e < P;
      s_old[j] = in_row ? rows.s[row + e] : 0.0f;
      half[j] = in_row ? rows.x_half[row + e] : 0.0f;
      xhat[j] = in_row && rows.adapt_then_combine ? rows.xhat[row + e] : 0.0f;
    }
    DTSIM_UNROLL
    for (int j = 0; j < J; ++j) {
      const std::size_t e = e0 + static_cast<std::size_t>(j) * stride;
      if (e >= P)
        break;
      choco_consensus_element(rows, v[j], s_old[j], half[j], xhat[j], rows.s + row + e, x + e);
    }
    return;
  }
  if (!m.refresh_lr && !m.subtract_lr && !m.add_rows) { // the plain mixing: nothing to read
    store_tile<J>(x, P, e0, stride, v);
    return;
  }
  const float refresh_lr = m.refresh_lr ? m.refresh_lr[b] : 0.0f;
  const float subtract_lr = m.subtract_lr ? m.subtract_lr[b] : 0.0f;
  // The rows read below are all loaded before the first store (local_step_tile says why).
  // Only here: with the plain mixing's tail in this form Nsight Compute put the kernel at
  // 0.80 ms per 1,024-node round and 71% of the DRAM bandwidth, against 0.74 ms and 77%
  // with the loop above (H100, runs 10 and 11 of docs/cuda.md).
  const bool accumulate = m.accumulate_rows != nullptr;
  const bool refresh_now = accumulate && m.refresh_now[b] != 0;
  float x_old[J], mhat_old[J], u[J], add[J], v_old[J];
  DTSIM_UNROLL
  for (int j = 0; j < J; ++j) {
    const std::size_t e = e0 + static_cast<std::size_t>(j) * stride;
    const bool in_row = e < P;
    x_old[j] = in_row && m.refresh_lr ? x[e] : 0.0f;
    mhat_old[j] = in_row && m.refresh_lr && (!accumulate || refresh_now) ? mhat[row + e] : 0.0f;
    v_old[j] = in_row && accumulate ? m.accumulate_rows[row + e] : 0.0f;
    u[j] = in_row && m.subtract_lr ? m.u_rows[row + e] : 0.0f;
    add[j] = in_row && m.add_rows ? m.add_rows[row + e] : 0.0f;
  }
  DTSIM_UNROLL
  for (int j = 0; j < J; ++j) {
    const std::size_t e = e0 + static_cast<std::size_t>(j) * stride;
    if (e >= P)
      break;
    if (m.refresh_lr) {
      const float displacement = (x_old[j] - v[j]) / refresh_lr;
      if (m.decentlam) {
        const float momentum = m.mu * mhat_old[j] + displacement;
        mhat[row + e] = momentum;
        v[j] = x_old[j] - refresh_lr * momentum;
      } else if (accumulate) {
        const float summed = v_old[j] + displacement;
        if (refresh_now) {
          mhat[row + e] = m.mu * mhat_old[j] + m.refresh_scale * summed;
          m.accumulate_rows[row + e] = 0.0f;
        } else {
          m.accumulate_rows[row + e] = summed;
        }
      } else {
        mhat[row + e] = m.mu * mhat_old[j] + (1 - m.mu) * displacement;
      }
    }
    if (m.subtract_lr)
      v[j] = v[j] - subtract_lr * u[j];
    if (m.add_rows)
      v[j] = v[j] + add[j];
    x[e] = v[j];
  }
}

// The local steps of a batch: entry b updates node[b]'s momentum from its gradient and
// model (rows of P floats) and writes its message out[b] = x - lr[b] * u, with
// u = g + weight_decay x, then with momentum m = momentum m + u and u = m (heavy ball) or
// u + momentum m (Nesterov): LocalUpdate's rule; with quasi_global, m is not stored; with
// combine_then_adapt, u replaces the gradient (LocalUpdate::direction) and out[b] = x (no
// message where out[b] is null: ResidentVectors::kNoMessage).
struct StepBatch {
  const int* node = nullptr;
  float* const* out = nullptr;
  const float* lr = nullptr;
  float momentum = 0;
  float weight_decay = 0;
  bool nesterov = false;
  bool quasi_global = false;       // the momentum is read, not written (QG-DSGDm)
  bool combine_then_adapt = false; // u into the gradient's row, out[b] = x
};

// One element of entry b's local step (StepBatch's rule) from its gradient g, model x and
// momentum m_old: writes the momentum (m, when there is one and the rule stores it), the
// combine-then-adapt direction into the gradient's slot (g_slot) and the message (out, which
// may be null only for combine-then-adapt's kNoMessage). Shared by the step's tiles and by
// the fused layer steps (fused_layer_step.hpp), so both write the same expressions.
DTSIM_HD inline void local_step_element(const StepBatch& s, float lr, float g, float x, float m_old,
                                        float* g_slot, float* m, float* out) {
  if (s.combine_then_adapt) {
    float u = s.weight_decay > 0 ? g + s.weight_decay * x : g;
    if (m) {
      const float m_new = s.momentum * m_old + u;
      *m = m_new;
      u = s.nesterov ? u + s.momentum * m_new : m_new;
    }
    *g_slot = u;
    if (out)
      *out = x;
    return;
  }
  float u = g + s.weight_decay * x;
  if (m) {
    const float m_new = s.momentum * m_old + g + s.weight_decay * x;
    if (!s.quasi_global)
      *m = m_new;
    u = s.nesterov ? g + s.weight_decay * x + s.momentum * m_new : m_new;
  }
  *out = x - lr * u;
}

// A tile's elements of a row (e0 + j * stride for j < J; 0 past P, or everywhere where
// `use` is false), loaded together: the rule tiles load every row before their first store
// (local_step_tile says why).
template <int J>
DTSIM_HD inline void load_tile(const float* row, bool use, std::size_t P, std::size_t e0,
                               std::size_t stride, float (&out)[J]) {
  DTSIM_UNROLL
  for (int j = 0; j < J; ++j) {
    const std::size_t e = e0 + static_cast<std::size_t>(j) * stride;
    out[j] = use && e < P ? row[e] : 0.0f;
  }
}

// Step entry b's rows of P floats (its node's gradient, model and momentum, null without
// momentum), its message (null: kNoMessage) and its rate.
struct StepRows {
  float* g;
  const float* x;
  float* m;
  float* out;
  float lr;
};
DTSIM_HD inline StepRows step_rows(const StepBatch& s, float* grads, const float* models,
                                   float* momenta, std::size_t P, int b) {
  const std::size_t row = static_cast<std::size_t>(s.node[b]) * P;
  return {grads + row, models + row, s.momentum != 0 ? momenta + row : nullptr, s.out[b], s.lr[b]};
}

// Calls step(rule) with the batch's rule: for the heavy ball (momentum, a message, no
// Nesterov, no quasi-global buffer, adapt then combine: D-PSGD's and DSGDm's step) with a copy
// whose flags are constants, so that local_step_element's tests of them fold away in the code
// `step` inlines instead of running for every element; otherwise with s itself. Every kernel
// that can step the heavy ball calls them through this (tracking's and CHOCO-SGD's, whose
// rules are never the heavy ball, call local_step_element directly), so that all compile the
// same expressions alike: nvcc may fuse a product into a sum where the product has one use,
// and a folded and an unfolded copy of one expression could then round apart.
template <class Step>
DTSIM_HD inline void with_step_rule(const StepBatch& s, const StepRows& r, const Step& step) {
  if (r.m && r.out && !s.combine_then_adapt && !s.nesterov && !s.quasi_global) {
    StepBatch heavy_ball = s;
    heavy_ball.combine_then_adapt = false;
    heavy_ball.nesterov = false;
    heavy_ball.quasi_global = false;
    step(heavy_ball);
  } else {
    step(s);
  }
}

// A tile of entry b's elements, as mix_tile's. The tile's gradient, model and momentum are
// all loaded before anything is stored: the compiler cannot tell that the rows do not
// overlap, so a store between two elements' loads would keep the next element's loads
// waiting for it (one element's loads in flight per thread, not J's). Nsight Compute put
// the interleaved kernel at 2.50 ms per 1,024-node round and 57% of the H100's DRAM
// bandwidth, this one at 1.61 ms and 89% (runs 10 and 11 of docs/cuda.md). Elements from
// `end` on (P by default) are left alone: a stretch of the row between layers whose steps a
// fused kernel takes (fused_layer_step.hpp).
template <int J>
DTSIM_HD inline void local_step_tile(const StepBatch& s, float* grads, const float* models,
                                     float* momenta, std::size_t P, int b, std::size_t e0,
                                     std::size_t stride, std::size_t end = ~std::size_t{0}) {
  const StepRows r = step_rows(s, grads, models, momenta, P, b);
  if (end > P)
    end = P;
  float g[J], x[J], m_old[J];
  DTSIM_UNROLL
  for (int j = 0; j < J; ++j) {
    const std::size_t e = e0 + static_cast<std::size_t>(j) * stride;
    const bool in_row = e < end;
    g[j] = in_row ? r.g[e] : 0.0f;
    x[j] = in_row ? r.x[e] : 0.0f;
    m_old[j] = in_row && r.m ? r.m[e] : 0.0f;
  }
  with_step_rule(s, r, [&](const StepBatch& rule) {
    DTSIM_UNROLL
    for (int j = 0; j < J; ++j) {
      const std::size_t e = e0 + static_cast<std::size_t>(j) * stride;
      if (e >= end)
        break;
      local_step_element(rule, r.lr, g[j], x[j], m_old[j], r.g + e, r.m ? r.m + e : nullptr,
                         r.out ? r.out + e : nullptr);
    }
  });
}

// A rule's own rows (LocalUpdateRule::rule_rows), nodes x P each: gradient tracking's
// trackers y and g_prev, D²'s x_prev and lr g_prev; and per step entry a first-step flag.
struct RuleRows {
  float* a = nullptr;
  float* b = nullptr;
  const int* first = nullptr; // 1 at the node's first step
};
// Gradient tracking's local step (ResidentVectors' gradient_tracking rule; the rows of
// GradientTracking::track): per element g += wd x, y = g (the node's first step) or
// y += g - g_prev, g_prev = g, then u from y as a combine-then-adapt step without weight
// decay (local_step_element: u into the gradient's row, x into the message) and y into the
// message's second vector.
template <int J>
DTSIM_HD inline void tracking_step_tile(const StepBatch& s, const RuleRows& t, float* grads,
                                        const float* models, float* momenta, std::size_t P, int b,
                                        std::size_t e0, std::size_t stride) {
  const StepRows r = step_rows(s, grads, models, momenta, P, b);
  const std::size_t row = static_cast<std::size_t>(s.node[b]) * P;
  float* y = t.a + row;
  float* g_prev = t.b + row;
  const bool first = t.first[b] != 0;
  StepBatch direction = s; // the weight decay entered g before the tracking
  direction.weight_decay = 0;
  direction.combine_then_adapt = true;
  float g[J], x[J], y_old[J], gp[J], m_old[J];
  load_tile(r.g, true, P, e0, stride, g);
  load_tile(r.x, true, P, e0, stride, x);
  load_tile(y, !first, P, e0, stride, y_old);
  load_tile(g_prev, !first, P, e0, stride, gp);
  load_tile(r.m, r.m != nullptr, P, e0, stride, m_old);
  DTSIM_UNROLL
  for (int j = 0; j < J; ++j) {
    const std::size_t e = e0 + static_cast<std::size_t>(j) * stride;
    if (e >= P)
      break;
    const float gv = s.weight_decay > 0 ? g[j] + s.weight_decay * x[j] : g[j];
    const float yv = first ? gv : y_old[j] + (gv - gp[j]);
    y[e] = yv;
    g_prev[e] = gv;
    local_step_element(direction, r.lr, yv, x[j], m_old[j], r.g + e, r.m ? r.m + e : nullptr,
                       r.out + e);
    r.out[P + e] = yv;
  }
}

// Momentum tracking's local step (ResidentVectors' momentum_tracking rule; the rows of
// MomentumTracking::step, d the row a): the message's first vector is x; at the node's
// first step d = g (g0, for the all-reduce), else m = momentum m + g + wd x, the message's
// second vector d - m, and u = m - d into the gradient's row (the mixing subtracts lr u).
template <int J>
DTSIM_HD inline void momentum_tracking_step_tile(const StepBatch& s, const RuleRows& t,
                                                 float* grads, const float* models, float* momenta,
                                                 std::size_t P, int b, std::size_t e0,
                                                 std::size_t stride) {
  const StepRows r = step_rows(s, grads, models, momenta, P, b);
  const std::size_t row = static_cast<std::size_t>(s.node[b]) * P;
  float* d = t.a + row;
  float* m = momenta + row; // always kept (keeps_momentum)
  const bool first = t.first[b] != 0;
  float g[J], x[J], d_old[J], m_old[J];
  load_tile(r.g, true, P, e0, stride, g);
  load_tile(r.x, true, P, e0, stride, x);
  load_tile(d, !first, P, e0, stride, d_old);
  load_tile(m, !first, P, e0, stride, m_old);
  DTSIM_UNROLL
  for (int j = 0; j < J; ++j) {
    const std::size_t e = e0 + static_cast<std::size_t>(j) * stride;
    if (e >= P)
      break;
    r.out[e] = x[j];
    if (first) {
      d[e] = g[j];
      continue;
    }
    const float m_new = s.momentum * m_old[j] + g[j] + s.weight_decay * x[j];
    m[e] = m_new;
    r.out[P + e] = d_old[j] - m_new;
    r.g[e] = m_new - d_old[j];
  }
}

// One element of momentum tracking's start (MomentumTracking::initialise), d holding g0:
// d = (g0 - gbar) / (1 - momentum), m = momentum d + g0 + wd x, the message's second vector
// d - m and u = m - d (the gradient's row, for the mixing).
DTSIM_HD inline void momentum_tracking_start_element(float momentum, float weight_decay, float gbar,
                                                     float x, float* d, float* m, float* d_minus_m,
                                                     float* u) {
  const float g0 = *d;
  const float dv = (g0 - gbar) / (1 - momentum);
  const float mv = momentum * dv + g0 + weight_decay * x;
  *d = dv;
  *m = mv;
  *d_minus_m = dv - mv;
  *u = mv - dv;
}

// D²'s local step (ResidentVectors' d2 rule; D2::correct per element): g += wd x, the
// message out[b] = x - lr g at the node's first step, else 2 x - x_prev - (lr g - lr_g_prev);
// then x_prev = x and lr_g_prev = lr g (rows a and b).
template <int J>
DTSIM_HD inline void d2_step_tile(const StepBatch& s, const RuleRows& t, const float* grads,
                                  const float* models, std::size_t P, int b, std::size_t e0,
                                  std::size_t stride) {
  const std::size_t row = static_cast<std::size_t>(s.node[b]) * P;
  const float* g = grads + row;
  const float* x = models + row;
  float* x_prev = t.a + row;
  float* lr_g_prev = t.b + row;
  float* out = s.out[b];
  const float lr = s.lr[b];
  const bool first = t.first[b] != 0;
  float gv[J], xv[J], xp[J], gp[J];
  load_tile(g, true, P, e0, stride, gv);
  load_tile(x, true, P, e0, stride, xv);
  load_tile(x_prev, !first, P, e0, stride, xp);
  load_tile(lr_g_prev, !first, P, e0, stride, gp);
  DTSIM_UNROLL
  for (int j = 0; j < J; ++j) {
    const std::size_t e = e0 + static_cast<std::size_t>(j) * stride;
    if (e >= P)
      break;
    const float gw = s.weight_decay > 0 ? gv[j] + s.weight_decay * xv[j] : gv[j];
    const float lr_g = lr * gw;
    out[e] = first ? xv[j] - lr_g : 2.0f * xv[j] - xp[j] - (lr_g - gp[j]);
    x_prev[e] = xv[j];
    lr_g_prev[e] = lr_g;
  }
}

// One element of CHOCO-SGD's step before its compression (LocalUpdate::step, then
// ChocoSgd::difference): x_half = x - lr u (local_step_element, the momentum written to m),
// with combine-then-adapt x_half += gamma (s - xhat); x_half is written and the difference
// d = x_half - xhat returned.
DTSIM_HD inline float choco_difference_element(const StepBatch& s, const ChocoRows& c, float lr,
                                               float g, float x, float m_old, float xhat, float sum,
                                               float* m, float* x_half) {
  float half = 0;
  local_step_element(s, lr, g, x, m_old, nullptr, m, &half);
  if (!c.adapt_then_combine)
    half = half + c.gamma * (sum - xhat);
  *x_half = half;
  return half - xhat;
}

// A QSGD bucket's constants (Qsgd::encode's), from its length and its float norm: one level
// is unit (norm / s, over tau in the contractive form); a bucket whose norm is zero or not
// finite passes through unquantized.
struct QsgdBucket {
  float levels = 0;           // s = 2^bits - 1
  float levels_over_norm = 0; // s / norm
  float unit = 0;
  bool pass_through = false;
};
DTSIM_HD inline QsgdBucket qsgd_bucket(float norm, std::size_t len, int bits, bool contractive) {
  QsgdBucket q;
  q.levels = static_cast<float>((1 << bits) - 1);
  q.pass_through = !(norm > 0.0f && norm <= FLT_MAX);
  q.levels_over_norm = q.levels / norm;
  q.unit = norm / q.levels;
  if (contractive) {
    const double lb = static_cast<double>(len);
    const double sd = static_cast<double>(q.levels);
    q.unit /= static_cast<float>(1.0 + fmin(lb / (sd * sd), sqrt(lb) / sd));
  }
  return q;
}
// QSGD buckets under kQsgdSmallBucket coordinates run a thread per bucket (a block per
// bucket would leave most of its threads idle); the norm a sequential sum.
constexpr std::size_t kQsgdSmallBucket = 16;
DTSIM_HD inline float sequential_norm(const float* d, std::size_t len) {
  float squares = 0;
  for (std::size_t e = 0; e < len; ++e)
    squares += d[e] * d[e];
  return sqrtf(squares);
}

// Element d of the bucket quantized with the uniform u in (0, 1): floor(r + u) levels,
// r = min(|d| s / norm, s), so that r is rounded up with probability frac(r); d's sign.
DTSIM_HD inline float qsgd_element(const QsgdBucket& q, float d, float u) {
  if (q.pass_through)
    return d;
  const float r = fminf(fabsf(d) * q.levels_over_norm, q.levels) + u;
  return copysignf(floorf(r) * q.unit, d);
}

// Elements first, first + stride, ... below end of d quantized with the bucket's constants q
// into out (and added to xhat where it is not null), element e with uniform(e); returns the
// sum of their squared errors (which the caller does not count where q passes through, as
// Qsgd::encode does not). Every QSGD-by-buckets kernel's elements: a block's threads at the
// block's stride, or one thread over a small bucket.
template <class Uniform>
DTSIM_HD inline float qsgd_elements(const QsgdBucket& q, const float* d, std::size_t first,
                                    std::size_t end, std::size_t stride, Uniform uniform,
                                    float* out, float* xhat) {
  float errors = 0;
  for (std::size_t e = first; e < end; e += stride) {
    const float x = d[e]; // loaded once: out or xhat may be d's row
    const float v = qsgd_element(q, x, uniform(e));
    out[e] = v;
    if (xhat)
      xhat[e] += v;
    errors += (v - x) * (v - x);
  }
  return errors;
}

// One small bucket (len coordinates of d from `first`, whose norm the caller gives) quantized
// by one thread (qsgd_elements): adds its squared error (none where it passes through) to
// error_sq.
template <class Uniform>
DTSIM_HD inline void qsgd_small_bucket(const float* d, std::size_t first, std::size_t len,
                                       float norm, int bits, bool contractive, Uniform uniform,
                                       float* out, float* xhat, float& error_sq) {
  const QsgdBucket q = qsgd_bucket(norm, len, bits, contractive);
  const float errors = qsgd_elements(q, d, first, first + len, 1, uniform, out, xhat);
  if (!q.pass_through)
    error_sq += errors;
}

// x rounded to the nearest IEEE half precision value (ties to even) and back to float: the
// fp16 compressor's value (Eigen::half's conversion, bit for bit: a host test). Beyond the
// largest half (65504, up to 65520 excluded) it is +-inf; NaN stays NaN.
DTSIM_HD inline float round_to_half(float x) {
  std::uint32_t bits = 0;
  memcpy(&bits, &x, sizeof bits);
  const std::uint32_t sign = bits & 0x80000000u;
  std::uint32_t a = bits ^ sign;
  if (a >= 0x7F800000u) // inf, NaN
    return x;
  if (a >= 0x477FF000u) { // 65520 and above round to inf
    a = 0x7F800000u;
  } else if (a < 0x38800000u) { // below 2^-14: half's subnormals, multiples of 2^-24
    float magnitude = 0;
    memcpy(&magnitude, &a, sizeof a);
    magnitude = rintf(magnitude * 0x1p24f) * 0x1p-24f; // both products exact
    memcpy(&a, &magnitude, sizeof a);
  } else { // 13 of the 23 fraction bits dropped, to nearest, ties to even
    a += 0x0FFFu + ((a >> 13) & 1u);
    a &= ~0x1FFFu;
  }
  a |= sign;
  float out = 0;
  memcpy(&out, &a, sizeof a);
  return out;
}

// CHOCO-SGD's compression of a step's whole difference d on a device (every form but QSGD
// by buckets): each element's q from d, whether the selection kept it (top-k, random-k) and
// its uniform (QSGD). The host's compressors give the same q from the same inputs (sign's
// mean and the selection are the kernel's; a host test).
struct WholeCompression {
  ResidentCompression::Kind kind = ResidentCompression::Kind::identity;
  float scale = 0; // sign: the mean |d|; random-k: 1 (contractive) or P / keep
  QsgdBucket qsgd = {};
};
DTSIM_HD inline float whole_compression_element(const WholeCompression& c, float d, bool kept,
                                                float u) {
  using Kind = ResidentCompression::Kind;
  switch (c.kind) {
  case Kind::half:
    return round_to_half(d);
  case Kind::qsgd:
    return qsgd_element(c.qsgd, d, u);
  case Kind::sign:
    return d >= 0.0f ? c.scale : -c.scale; // SignCompressor's: NaN takes -scale
  case Kind::top_k:
    return kept ? d : 0.0f;
  case Kind::random_k:
    return kept ? c.scale * d : 0.0f;
  default: // identity (none has no kernel)
    return d;
  }
}

// splitmix64's finalizer: a bijective mix of the 64 bits.
DTSIM_HD inline std::uint64_t mix64(std::uint64_t z) {
  z = (z ^ (z >> 30)) * 0xBF58476D1CE4E5B9ull;
  z = (z ^ (z >> 27)) * 0x94D049BB133111EBull;
  return z ^ (z >> 31);
}
// The device's uniform for element e of a node's step (CHOCO-SGD's QSGD on cuda-resident):
// counter-based, a hash of (the node's seed, its step, e / 4), so that every bucket draws in
// parallel; each 64-bit value gives four uniforms on fill_uniforms' grid of 2^16 midpoints,
// as the host's stream does (whose draws are sequential and so not these).
DTSIM_HD inline float counter_uniform(std::uint64_t seed, std::uint64_t step, std::size_t e) {
  const std::uint64_t r = mix64(mix64(seed + step * 0x9E3779B97F4A7C15ull) +
                                static_cast<std::uint64_t>(e / 4) * 0xD1B54A32D192ED03ull);
  const auto bits = static_cast<unsigned>((r >> (16 * (e % 4))) & 0xFFFFu);
  return (static_cast<float>(bits) + 0.5f) * 0x1p-16f;
}

// The device's key for element e of a node's step (CHOCO-SGD's random-k on cuda-resident):
// a hash of (the node's seed, its step, e); the keep largest keys are a uniform draw of keep
// coordinates (ties, about n^2 / 2^33 pairs among n, go to the lower index).
DTSIM_HD inline std::uint32_t counter_key(std::uint64_t seed, std::uint64_t step, std::size_t e) {
  const std::uint64_t r = mix64(mix64(seed + step * 0x9E3779B97F4A7C15ull) +
                                (static_cast<std::uint64_t>(e) + 1) * 0x9FB21C651E98DF25ull);
  return static_cast<std::uint32_t>(r >> 32);
}

// SwarmSGD's lattice quantizer per element (LatticeQuantizer's encode, decode and own_view):
// index k = round(x / side) (stochastic: floor(x / side + u)), clamped to +-(2^24 - 1) (NaN
// stays NaN); the receiver decodes e = k mod q to the lattice point nearest its reference r.
struct LatticeCodec {
  float side = 0, inv_side = 0;                          // s, 1/s
  float levels = 0, inv_levels = 0, inv_levels_side = 0; // q = 2^bits, 1/q, 1/(q s)
  bool stochastic = false;
};
constexpr float kLatticeMaxIndex = 16777215.0f;
inline LatticeCodec lattice_codec(int bits, double side, bool stochastic) {
  const auto levels = static_cast<double>(std::int64_t{1} << bits);
  return {static_cast<float>(side),
          static_cast<float>(1.0 / side),
          static_cast<float>(levels),
          1.0f / static_cast<float>(levels),
          static_cast<float>(1.0 / (levels * side)),
          stochastic};
}
DTSIM_HD inline float lattice_index(const LatticeCodec& c, float x, float u) {
  const float w = c.stochastic ? floorf(x * c.inv_side + u) : rintf(x * c.inv_side);
  return w < -kLatticeMaxIndex ? -kLatticeMaxIndex : w > kLatticeMaxIndex ? kLatticeMaxIndex : w;
}
// The lattice value decoded from index k against reference r; *failed when it is not k's.
DTSIM_HD inline float lattice_decode(const LatticeCodec& c, float k, float r, bool* failed) {
  const float e = k - c.levels * floorf(k * c.inv_levels);
  const float o = e + c.levels * rintf(r * c.inv_levels_side - e * c.inv_levels);
  *failed = o != k;
  return o * c.side;
}

// A tile of ResidentVectors::apply's step dst = op(a, b, s, t, u) (vector_ops.hpp's
// apply_vector_op per element, server_step.hpp's server_step for a server step, which also
// writes b; dst may be a).
template <int J>
DTSIM_HD inline void vector_op_tile(ResidentVectors::VectorOp op, float* dst, const float* a,
                                    float* b, float s, float t, float u, std::size_t P,
                                    std::size_t e0, std::size_t stride) {
  using Op = ResidentVectors::VectorOp;
  DTSIM_UNROLL
  for (int j = 0; j < J; ++j) {
    const std::size_t e = e0 + static_cast<std::size_t>(j) * stride;
    if (e >= P)
      break;
    switch (op) {
    case Op::copy:
      dst[e] = a[e];
      break;
    case Op::average:
      dst[e] = (a[e] + b[e]) * 0.5f;
      break;
    case Op::add_half_difference:
      dst[e] = dst[e] + (a[e] - b[e]) * 0.5f;
      break;
    case Op::subtract_scaled:
      dst[e] = dst[e] - s * a[e];
      break;
    case Op::add:
      dst[e] = dst[e] + a[e];
      break;
    case Op::divide:
      dst[e] = dst[e] / s;
      break;
    case Op::zero:
      dst[e] = 0.0f;
      break;
    case Op::server_step: // w = dst, M = b; rate s, momentum t, weight decay u
      if (t > 0) {
        const float m = t * b[e] + a[e] + u * dst[e];
        b[e] = m;
        dst[e] = dst[e] - s * m;
      } else if (u > 0) {
        dst[e] = dst[e] - s * (a[e] + u * dst[e]);
      } else {
        dst[e] = dst[e] - s * a[e];
      }
      break;
    case Op::delay_compensate: // g = dst, w = a, w_bak = b, lambda s
      dst[e] = dst[e] + s * (dst[e] * dst[e]) * (a[e] - b[e]);
      break;
    case Op::subtract:
      dst[e] = a[e] - b[e];
      break;
    case Op::average_less:
      dst[e] = (a[e] + b[e]) * 0.5f - dst[e];
      break;
    case Op::average_step_less:
      dst[e] = ((a[e] + b[e]) * 0.5f - a[e]) - dst[e];
      break;
    case Op::average_step_add:
      dst[e] = dst[e] + ((a[e] + b[e]) * 0.5f - a[e]);
      break;
    case Op::mean_square: // MS = dst, g = a; decay s, 1 - decay t
      dst[e] = s * dst[e] + t * (a[e] * a[e]);
      break;
    case Op::delay_compensate_adaptive: // g = dst, MS = a, w - w_bak = b; lambda s, eps t
      dst[e] = dst[e] + s * (1.0f / sqrtf(a[e] + t)) * (dst[e] * dst[e]) * b[e];
      break;
    case Op::accumulate: // on the double sum: sum_tile
    case Op::mean_of_sum:
      break;
    }
  }
}

// A tile of the steps on a parameter server's double sum (vector_ops.hpp's accumulate_rows
// and mean_of_sum, the same IEEE operations per element): accumulate, sum += a (s > 0) or
// sum -= a; mean_of_sum, out = (float)(sum * (1 / s)).
template <int J>
DTSIM_HD inline void sum_tile(ResidentVectors::VectorOp op, double* sum, float* out, const float* a,
                              float s, std::size_t P, std::size_t e0, std::size_t stride) {
  const double reciprocal = 1.0 / static_cast<double>(s);
  DTSIM_UNROLL
  for (int j = 0; j < J; ++j) {
    const std::size_t e = e0 + static_cast<std::size_t>(j) * stride;
    if (e >= P)
      break;
    if (op == ResidentVectors::VectorOp::accumulate)
      sum[e] = s > 0 ? sum[e] + static_cast<double>(a[e]) : sum[e] - static_cast<double>(a[e]);
    else
      out[e] = static_cast<float>(sum[e] * reciprocal);
  }
}

// Element e of the mean of `nodes` rows of P floats, summed in row order (vector_ops.hpp's
// mean_of_columns).
DTSIM_HD inline float mean_of_rows_element(const float* rows, int nodes, std::size_t P,
                                           std::size_t e) {
  float o = rows[e];
  for (int i = 1; i < nodes; ++i)
    o += rows[static_cast<std::size_t>(i) * P + e];
  return o / static_cast<float>(nodes);
}

// Threads per block of the consensus distance's per-node reduction (a tree: a power of 2).
constexpr int kDistanceThreads = 256;
static_assert((kDistanceThreads & (kDistanceThreads - 1)) == 0, "the tree halves the block");

// Thread t's share of ||row - mean||^2 over P floats when `threads` threads stride the row
// (the consensus distance's per-node reduction): the float difference squared, summed in
// double in element order.
DTSIM_HD inline double squared_distance_partial(const float* row, const float* mean, std::size_t P,
                                                int t, int threads) {
  double s = 0;
  for (std::size_t e = static_cast<std::size_t>(t); e < P; e += static_cast<std::size_t>(threads)) {
    const float d = row[e] - mean[e];
    s += static_cast<double>(d) * static_cast<double>(d);
  }
  return s;
}

} // namespace dtsim::cuda
