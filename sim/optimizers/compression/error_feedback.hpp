// SPDX-License-Identifier: MIT
// Error feedback around any compressor: what one message leaves out, the next one carries.
#pragma once

#include "sim/core/flat_vector.hpp"
#include "sim/optimizers/compression/compressor.hpp"

#include <memory>

namespace dtsim {

// encode(x): v = x + e; send Q(v); e = v - Q(v), where Q(v) is the sender's own
// reconstruction (for the lattice quantizer: decoded against v itself). The memory e is this
// instance's (one per node). The reported error is that of Q(v) against v.
// Key: `error_feedback: true` in the compressor map, where the algorithm allows it.
class ErrorFeedback final : public Compressor {
public:
  ErrorFeedback(std::unique_ptr<Compressor> inner, std::size_t dim);
  std::string describe() const override { return inner_->describe() + " + error feedback"; }
  std::int64_t encoded_bytes(std::size_t dim) const override { return inner_->encoded_bytes(dim); }
  EncodeStats encode(std::span<const float> x, std::span<float> wire, Rng& rng) override;
  bool wire_is_decoded() const override { return inner_->wire_is_decoded(); }
  bool needs_reference() const override { return inner_->needs_reference(); }
  void own_view(std::span<const float> wire, std::span<const float> x,
                std::span<float> out) const override {
    inner_->own_view(wire, x, out);
  }
  std::int64_t decode(std::span<const float> wire, std::span<const float> ref,
                      std::span<float> out) const override {
    return inner_->decode(wire, ref, out);
  }
  std::span<const float> memory() const { return {error_.data(), dim_}; }
  const Compressor& inner() const { return *inner_; }

private:
  std::unique_ptr<Compressor> inner_;
  std::size_t dim_;
  Vec error_; // e
  Vec input_; // v = x + e
  Vec own_;   // Q(v) as the receiver rebuilds it
};

} // namespace dtsim
