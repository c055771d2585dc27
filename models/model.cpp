// SPDX-License-Identifier: MIT
// Model: the default of the optional per-example gradient pass (unsupported).
#include "models/model.hpp"

#include <stdexcept>

namespace dtsim {

double Model::loss_and_per_example_grads(std::span<const float>, const BatchView&, std::span<float>,
                                         std::span<float>, Workspace&) const {
  throw std::logic_error("model " + describe() + " does not compute per-example gradients");
}

} // namespace dtsim
