// SPDX-License-Identifier: MIT
#include "sim/optimizers/node_rates.hpp"

namespace dtsim {

NodeRates::NodeRates(const Params& algorithm, const AlgorithmSetup& setup, double default_lr)
    : schedule_(algorithm, setup, default_lr), steps_(static_cast<std::size_t>(setup.nodes), 0),
      current_(static_cast<std::size_t>(setup.nodes)) {
  for (int i = 0; i < setup.nodes; ++i)
    current_[static_cast<std::size_t>(i)] = schedule_.for_step(i, 0);
}

float NodeRates::take(int node) {
  const auto i = static_cast<std::size_t>(node);
  current_[i] = schedule_.for_step(node, steps_[i]++);
  return current_[i];
}

void NodeRates::add_metrics(std::vector<std::pair<std::string, double>>& columns) const {
  double sum = 0;
  for (const float r : current_)
    sum += static_cast<double>(r);
  columns.emplace_back("lr", sum / static_cast<double>(current_.size()));
}

} // namespace dtsim
