// SPDX-License-Identifier: MIT
// Per-node reshuffling minibatch stream.
#include "sim/engine/data_sampler.hpp"

#include "sim/core/errors.hpp"

namespace dtsim {

DataSampler::DataSampler(std::vector<std::uint32_t> indices, std::uint64_t seed, int node,
                         bool reshuffle)
    : order_(std::move(indices)), reshuffle_(reshuffle),
      rng_(Rng::stream(seed, "data", static_cast<std::uint64_t>(node))) {
  DTSIM_ASSERT(!order_.empty(), "a node without training examples");
  rng_.shuffle(order_);
  previous_.reserve(order_.size());
  epochs_ = 1;
}

void DataSampler::next_batch(std::span<std::uint32_t> out) {
  for (auto& idx : out) {
    if (pos_ == order_.size()) {
      previous_.assign(order_.begin(), order_.end()); // reserved: no allocation
      if (reshuffle_)
        rng_.shuffle(order_);
      pos_ = 0;
      ++epochs_;
    }
    idx = order_[pos_++];
  }
}

} // namespace dtsim
