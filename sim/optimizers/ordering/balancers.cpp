// SPDX-License-Identifier: MIT
// Mean and pair balancing steps.
#include "sim/optimizers/ordering/balancers.hpp"

#include "sim/core/errors.hpp"

namespace dtsim {

MeanBalancer::MeanBalancer(std::size_t dim, std::size_t epoch_size)
    : s_(Vec::Zero(static_cast<Eigen::Index>(dim))), mbar_(Vec::Zero(s_.size())),
      mnext_(Vec::Zero(s_.size())), c_(s_.size()), inv_n_(1.0f / static_cast<float>(epoch_size)) {
  DTSIM_ASSERT(epoch_size >= 1, "MeanBalancer: empty epoch");
}

bool MeanBalancer::step(std::span<const float> g) {
  DTSIM_ASSERT(g.size() == dim(), "MeanBalancer: gradient of the wrong size");
  const ConstVecMap gv = as_vec(g);
  mnext_ += inv_n_ * gv;
  c_ = gv - mbar_;
  // <s, c> <= 0 is the same test as ||s + c|| <= ||s - c||.
  if (s_.dot(c_) <= 0.0f) {
    s_ += c_;
    return true;
  }
  s_ -= c_;
  return false;
}

void MeanBalancer::end_epoch() {
  mbar_.swap(mnext_);
  mnext_.setZero();
  s_.setZero();
}

PairBalancer::PairBalancer(std::size_t dim)
    : s_(Vec::Zero(static_cast<Eigen::Index>(dim))), dlt_(s_.size()) {}

bool PairBalancer::step(std::span<const float> g_first, std::span<const float> g_second) {
  DTSIM_ASSERT(g_first.size() == static_cast<std::size_t>(s_.size()) &&
                   g_second.size() == g_first.size(),
               "PairBalancer: gradients of the wrong size");
  dlt_ = as_vec(g_first) - as_vec(g_second);
  return step_difference({dlt_.data(), static_cast<std::size_t>(dlt_.size())});
}

bool PairBalancer::step_difference(std::span<const float> dlt) {
  DTSIM_ASSERT(dlt.size() == static_cast<std::size_t>(s_.size()),
               "PairBalancer: difference of the wrong size");
  const ConstVecMap d = as_vec(dlt);
  if (s_.dot(d) <= 0.0f) {
    s_ += d;
    return true;
  }
  s_ -= d;
  return false;
}

} // namespace dtsim
