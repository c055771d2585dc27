// SPDX-License-Identifier: MIT
// QSGD stochastic quantization, bucketed.
#include "sim/optimizers/compression/qsgd.hpp"

#include "sim/core/flat_vector.hpp"

#include <algorithm>
#include <cmath>

namespace dtsim {

Qsgd::Qsgd(const Params& p, const CompressorSetup& setup)
    : bits_(static_cast<int>(p.integer("bits", 4, Range::between(1, 16)))),
      bucket_(static_cast<std::size_t>(p.integer("bucket", 512, Range::non_negative()))),
      contractive_(p.choice("form", setup.contractive ? "contractive" : "unbiased",
                            {"unbiased", "contractive"}) == "contractive") {
  // uniforms_ waits for the first encode: a method whose steps a device compresses never
  // encodes here, and n nodes' draws would be n vectors of host memory.
}

std::string Qsgd::describe() const {
  return "qsgd (" + std::to_string(bits_) + " bits, bucket " +
         (bucket_ == 0 ? std::string("whole vector") : std::to_string(bucket_)) +
         (contractive_ ? ", contractive" : "") + ")";
}

std::int64_t Qsgd::encoded_bytes(std::size_t dim) const {
  const std::size_t b = bucket_ == 0 ? std::max<std::size_t>(dim, 1) : bucket_;
  const auto buckets = static_cast<std::int64_t>((dim + b - 1) / b);
  const auto bits = static_cast<std::int64_t>(dim) * (bits_ + 1);
  return 4 * buckets + (bits + 7) / 8;
}

float Qsgd::bucket_norm(std::span<const float> bucket) {
  return as_vec(bucket).norm();
}

EncodeStats Qsgd::encode(std::span<const float> x, std::span<float> wire, Rng& rng) {
  EncodeStats st;
  if (uniforms_.size() != x.size())
    uniforms_.resize(x.size()); // once
  fill_uniforms(rng, uniforms_);
  const float s = static_cast<float>((1 << bits_) - 1);
  const std::size_t b = bucket_ == 0 ? std::max<std::size_t>(x.size(), 1) : bucket_;
  for (std::size_t first = 0; first < x.size(); first += b) {
    const std::size_t len = std::min(b, x.size() - first);
    const auto v = as_vec(x.subspan(first, len));
    auto out = as_vec(wire.subspan(first, len));
    const float norm = bucket_norm(x.subspan(first, len));
    st.norm_sq += static_cast<double>(norm) * static_cast<double>(norm);
    if (!(norm > 0) || !std::isfinite(norm)) {
      // A zero bucket is sent as its norm alone; a non-finite one passes through, so that a
      // diverging run is noticed instead of hidden.
      out = v;
      continue;
    }
    float unit = norm / s; // value of one level
    if (contractive_) {
      const double lb = static_cast<double>(len);
      const double sd = static_cast<double>(s);
      unit /= static_cast<float>(1.0 + std::min(lb / (sd * sd), std::sqrt(lb) / sd));
    }
    // floor(r + u), u uniform in [0, 1): r rounded up with probability frac(r). An Eigen
    // expression (GCC does not vectorize std::floor loops), then the signs.
    const auto u = as_vec(std::span<const float>(uniforms_).subspan(first, len)).array();
    out.array() = ((v.array().abs() * (s / norm)).min(s) + u).floor() * unit;
    for (std::size_t k = 0; k < len; ++k)
      wire[first + k] = std::copysign(wire[first + k], x[first + k]);
    st.error_sq += static_cast<double>((out - v).squaredNorm());
  }
  return st;
}

} // namespace dtsim
