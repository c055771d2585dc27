// SPDX-License-Identifier: MIT
// The resident device backend's vector math (ResidentVectors on the device), one element
// each: the gossip mixing into a node's model and the local update writing the node's
// message. Shared by the device kernels (device_batch_runner.cuh) and the host tests, which
// compare them with the CPU algorithms' weighted_sum and LocalUpdate::step.
#pragma once

#include "cuda/mlp_batch_math.hpp"

#include <cstddef>

namespace dtsim::cuda {

// The mixings of a batch: entry b sets model node[b] (rows of P floats in `models`) to
// x_new = self_w[b] * self[b] + sum over c in [first[b], first[b + 1]) of in_w[c] * in[c],
// summed in c order (the order of the node's in-neighbours). With `refresh_lr` (a
// quasi-global rule), first the node's buffer (rows of `mhat`) takes
// mu mhat + (1 - mu) (x - x_new) / refresh_lr[b], x the model before. With `subtract_lr`
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
};

DTSIM_HD inline void mix_element(const MixBatch& m, float* models, float* mhat, std::size_t P,
                                 int b, std::size_t e) {
  float v = m.self_w[b] * m.self[b][e];
  for (int c = m.first[b]; c < m.first[b + 1]; ++c)
    v += m.in_w[c] * m.in[c][e];
  const std::size_t at = static_cast<std::size_t>(m.node[b]) * P + e;
  if (m.refresh_lr)
    mhat[at] = m.mu * mhat[at] + (1 - m.mu) * ((models[at] - v) / m.refresh_lr[b]);
  if (m.subtract_lr)
    v = v - m.subtract_lr[b] * m.u_rows[at];
  models[at] = v;
}

// The local steps of a batch: entry b updates node[b]'s momentum from its gradient and
// model (rows of P floats) and writes its message out[b] = x - lr[b] * u, with
// u = g + weight_decay x, then with momentum m = momentum m + u and u = m (heavy ball) or
// u + momentum m (Nesterov): LocalUpdate's rule; with quasi_global, m is not stored; with
// combine_then_adapt, u replaces the gradient (LocalUpdate::direction) and out[b] = x.
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

DTSIM_HD inline void local_step_element(const StepBatch& s, float* grads, const float* models,
                                        float* momenta, std::size_t P, int b, std::size_t e) {
  const std::size_t at = static_cast<std::size_t>(s.node[b]) * P + e;
  const float g = grads[at], x = models[at];
  if (s.combine_then_adapt) {
    float u = s.weight_decay > 0 ? g + s.weight_decay * x : g;
    if (s.momentum != 0) {
      const float m = s.momentum * momenta[at] + u;
      momenta[at] = m;
      u = s.nesterov ? u + s.momentum * m : m;
    }
    grads[at] = u;
    s.out[b][e] = x;
    return;
  }
  float u = g + s.weight_decay * x;
  if (s.momentum != 0) {
    const float m = s.momentum * momenta[at] + g + s.weight_decay * x;
    if (!s.quasi_global)
      momenta[at] = m;
    u = s.nesterov ? g + s.weight_decay * x + s.momentum * m : m;
  }
  s.out[b][e] = x - s.lr[b] * u;
}

} // namespace dtsim::cuda
