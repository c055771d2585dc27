// SPDX-License-Identifier: MIT
// The default evaluation model: the average of the node models, summed in node order.
#include "sim/engine/algorithm.hpp"

#include "sim/core/flat_vector.hpp"

namespace dtsim {

void Context::mean_of_models(std::span<float> out) const {
  VecMap avg = as_vec(out);
  avg = as_vec(params_view(0));
  for (int i = 1; i < num_nodes(); ++i)
    avg += as_vec(params_view(i));
  avg /= static_cast<float>(num_nodes());
}

void Algorithm::eval_model(const Context& ctx, std::span<float> out) const {
  ctx.mean_of_models(out);
}

} // namespace dtsim
