// SPDX-License-Identifier: MIT
// Learning-rate schedule: reading the keys and evaluating the piecewise rule.
#include "sim/optimizers/lr_schedule.hpp"

#include "sim/core/errors.hpp"

#include <algorithm>

namespace dtsim {
namespace {

void check_increasing(const Params& p, const char* key, const std::vector<double>& v) {
  for (std::size_t k = 1; k < v.size(); ++k)
    if (!(v[k] > v[k - 1]))
      p.fail(key, "expected strictly increasing values, got " + format_number(v[k - 1]) +
                      " before " + format_number(v[k]));
}

} // namespace

LrSchedule::LrSchedule(const Params& algorithm, const AlgorithmSetup& setup, double default_lr)
    : base_(algorithm.number("lr", default_lr, Range::positive())), peak_(base_),
      batch_(setup.batch_size) {
  for (std::int64_t n : setup.node_samples) {
    node_samples_.push_back(static_cast<double>(n));
    total_samples_ += static_cast<double>(n);
  }
  if (!algorithm.has("lr_schedule"))
    return;
  const Params p = algorithm.child("lr_schedule");
  constant_ = false;
  if (p.has("scale_with_nodes")) {
    const Params s = p.child("scale_with_nodes");
    const double base_batch =
        s.number("base_batch", std::max(1, setup.batch_size), Range{0.0, 1e9, true, false});
    scale_ = setup.nodes * setup.batch_size / base_batch;
    peak_ = base_ * scale_;
  }
  warmup_epochs_ = p.number("warmup_epochs", 0.0, Range::non_negative());
  if (warmup_epochs_ > 0)
    warmup_from_ = p.number("warmup_from", Range::positive());
  const bool has_factor = p.has("decay_factor");
  decay_factor_ = p.number("decay_factor", 0.1, Range{0.0, 1.0, true, false});
  const bool has_at = p.has("decay_at"), has_epochs = p.has("decay_epochs");
  if (has_factor && !has_at && !has_epochs) // as warmup_from without a warm-up
    p.fail("decay_factor", "a decay factor without milestones does nothing: give decay_at "
                           "(fractions of the budget) or decay_epochs");
  if (has_at && has_epochs)
    p.fail("decay_epochs", "give decay milestones either as decay_at (fractions of the budget) "
                           "or as decay_epochs, not both");
  if (has_epochs) {
    milestones_ = p.numbers("decay_epochs", {}, Range::positive());
    check_increasing(p, "decay_epochs", milestones_);
  } else {
    const std::vector<double> at = p.numbers("decay_at", {}, Range{0.0, 1.0, true, true});
    check_increasing(p, "decay_at", at);
    if (!at.empty() && setup.budget_epochs <= 0)
      p.fail("decay_at", "fractions of the training budget need stop.epochs or stop.steps "
                         "(this run has only a time budget); use decay_epochs instead");
    for (double f : at)
      milestones_.push_back(f * setup.budget_epochs);
  }
  DTSIM_ASSERT(batch_ > 0 && node_samples_.size() == static_cast<std::size_t>(setup.nodes),
               "an lr schedule needs the batch size and every node's data size");
  for (double n : node_samples_)
    DTSIM_ASSERT(n > 0, "a node without training examples has no epoch position");
}

double LrSchedule::at_epoch(double epoch) const {
  if (constant_)
    return base_;
  double lr = peak_;
  if (epoch < warmup_epochs_)
    lr = warmup_from_ + (peak_ - warmup_from_) * epoch / warmup_epochs_;
  for (double m : milestones_)
    if (epoch >= m)
      lr *= decay_factor_;
  return lr;
}

double LrSchedule::node_epoch(int node, std::int64_t steps) const {
  if (constant_)
    return 0;
  return static_cast<double>(steps) * batch_ / node_samples_[static_cast<std::size_t>(node)];
}

double LrSchedule::global_epoch(double samples) const {
  if (constant_)
    return 0;
  return samples / total_samples_;
}

std::string LrSchedule::describe() const {
  if (constant_)
    return "";
  std::string s = ", lr " + format_number(peak_);
  if (scale_ != 1)
    s += " (" + format_number(base_) + " x " + format_number(scale_) + ")";
  if (warmup_epochs_ > 0)
    s += ", warm-up " + format_number(warmup_epochs_) + " epochs from " +
         format_number(warmup_from_);
  if (!milestones_.empty()) {
    s += ", x" + format_number(decay_factor_) + " at epochs";
    for (std::size_t k = 0; k < milestones_.size(); ++k)
      s += (k ? ", " : " ") + format_number(milestones_[k]);
  }
  return s;
}

} // namespace dtsim
