// SPDX-License-Identifier: MIT
// Error-feedback memory.
#include "sim/optimizers/compression/error_feedback.hpp"

namespace dtsim {

ErrorFeedback::ErrorFeedback(std::unique_ptr<Compressor> inner, std::size_t dim)
    : inner_(std::move(inner)), dim_(dim), error_(Vec::Zero(static_cast<Eigen::Index>(dim))),
      input_(static_cast<Eigen::Index>(dim)), own_(static_cast<Eigen::Index>(dim)) {}

EncodeStats ErrorFeedback::encode(std::span<const float> x, std::span<float> wire, Rng& rng) {
  input_ = as_vec(x) + error_;
  const std::span<const float> v{input_.data(), dim_};
  const EncodeStats st = inner_->encode(v, wire, rng);
  if (inner_->wire_is_decoded()) {
    error_ = input_ - as_vec(std::span<const float>(wire));
  } else {
    inner_->own_view(wire, v, {own_.data(), dim_});
    error_ = input_ - own_;
  }
  return st;
}

} // namespace dtsim
