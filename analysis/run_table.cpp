// SPDX-License-Identifier: MIT
// Per-run figures from a trace and their grouping over seeds.
#include "analysis/run_table.hpp"

#include "analysis/stability.hpp"
#include "analysis/statistics.hpp"

#include <algorithm>
#include <charconv>
#include <cmath>
#include <cstdio>
#include <limits>
#include <optional>

namespace dtsim::analysis {
namespace {

constexpr double kNaN = std::numeric_limits<double>::quiet_NaN();

const std::vector<double>& metric(const TraceContents& t, const std::string& name) {
  static const std::vector<double> empty;
  const auto it = t.metrics.find(name);
  return it == t.metrics.end() ? empty : it->second;
}

double last_finite(const std::vector<double>& v) {
  for (auto it = v.rbegin(); it != v.rend(); ++it)
    if (std::isfinite(*it))
      return *it;
  return kNaN;
}

const std::vector<double>& epoch_column(const TraceContents& t, const std::string& name) {
  static const std::vector<double> empty;
  const auto it = t.epochs.find(name);
  return it == t.epochs.end() ? empty : it->second;
}

// Mean of the finite values from index `first` on.
double mean_finite(const std::vector<double>& v, std::size_t first) {
  double s = 0;
  int n = 0;
  for (std::size_t i = first; i < v.size(); ++i)
    if (std::isfinite(v[i])) {
      s += v[i];
      ++n;
    }
  return n > 0 ? s / n : kNaN;
}

// The whole text as a number, or nothing.
std::optional<double> as_number(const std::string& text) {
  double value = 0;
  const char* end = text.data() + text.size();
  const auto [ptr, ec] = std::from_chars(text.data(), end, value);
  if (text.empty() || ec != std::errc() || ptr != end)
    return std::nullopt;
  return value;
}

std::string format_seed(double seed) {
  char buf[32];
  std::snprintf(buf, sizeof buf, "%.0f", seed);
  return buf;
}

double attr(const TraceContents& t, const std::string& name) {
  const auto it = t.number_attributes.find(name);
  return it == t.number_attributes.end() ? kNaN : it->second;
}

// y at x = at by linear interpolation between the samples around it (xs increasing); NaN
// outside [xs.front(), xs.back()].
double interpolate(const std::vector<double>& xs, const std::vector<double>& ys, double at) {
  const std::size_t n = std::min(xs.size(), ys.size());
  if (n == 0 || !(at >= xs[0]) || at > xs[n - 1])
    return kNaN;
  const auto hi = static_cast<std::size_t>(
      std::lower_bound(xs.begin(), xs.begin() + static_cast<std::ptrdiff_t>(n), at) - xs.begin());
  if (xs[hi] == at || hi == 0)
    return ys[hi];
  const double w = (at - xs[hi - 1]) / (xs[hi] - xs[hi - 1]);
  return ys[hi - 1] + w * (ys[hi] - ys[hi - 1]);
}

} // namespace

const std::vector<std::string>& run_columns() {
  static const std::vector<std::string> columns = {"final_acc",
                                                   "best_acc",
                                                   "node_acc_mean",
                                                   "node_acc_min",
                                                   "time_to_target_s",
                                                   "updates_to_target",
                                                   "acc_std_2nd_half",
                                                   "acc_window_std",
                                                   "acc_mean_abs_change",
                                                   "acc_oscillation",
                                                   "acc_worst_drop",
                                                   "train_loss_std",
                                                   "diverged",
                                                   "consensus",
                                                   "bytes_sent",
                                                   "staleness_mean",
                                                   "staleness_p95",
                                                   "wall_s",
                                                   "sim_per_wall",
                                                   "sim_s",
                                                   "bytes_to_target",
                                                   "idle_per_compute",
                                                   "bits_per_coord",
                                                   "epoch_train_loss",
                                                   "epoch_train_loss_2nd_half",
                                                   "epoch_test_acc",
                                                   "herding_bound",
                                                   "herding_bound_mean",
                                                   "order_bytes",
                                                   "acc_at_time"};
  return columns;
}

RunRow summarize_run(const std::string& path, const TraceContents& t, double target,
                     double at_time_s) {
  RunRow row;
  row.path = path;
  const auto status = t.text_attributes.find("status");
  row.status = status == t.text_attributes.end() ? "?" : status->second;
  const auto& acc = metric(t, "test_accuracy");
  const auto& time = metric(t, "sim_time_s");
  const auto& updates = metric(t, "updates");
  Stability s; // a run without evaluations (a header-only .partial) has no measure at all
  if (!acc.empty())
    s = stability(acc);
  else
    s = {kNaN, kNaN, kNaN, kNaN, kNaN, kNaN, kNaN};
  // Measures whose window holds too few evaluations are missing, with the reason: a curve of
  // 2 points has std 0, which is not "perfectly stable".
  const std::size_t second_half = acc.size() - acc.size() / 2;
  const bool short_half = !acc.empty() && second_half < kMinWindowPoints;
  const bool short_curve = !acc.empty() && acc.size() < kMinWindowPoints;
  if (short_half)
    s.std_second_half = s.mean_abs_change = s.oscillation = kNaN;
  if (short_curve)
    s.window_std = s.worst_drop = kNaN;
  const auto& bytes = metric(t, "bytes_sent");
  double t_target = kNaN, u_target = kNaN, b_target = kNaN;
  for (std::size_t k = 0; k < acc.size(); ++k)
    if (acc[k] >= target) {
      t_target = k < time.size() ? time[k] : kNaN;
      u_target = k < updates.size() ? updates[k] : kNaN;
      b_target = k < bytes.size() ? bytes[k] : kNaN;
      break;
    }
  // Time nodes spent waiting per time spent computing, all nodes together (the
  // synchronisation cost of gossip methods as a fraction of compute).
  double idle = kNaN, compute = kNaN;
  if (const auto i = t.nodes.find("idle_s"), c = t.nodes.find("compute_s");
      i != t.nodes.end() && c != t.nodes.end()) {
    idle = compute = 0;
    for (double x : i->second)
      idle += x;
    for (double x : c->second)
      compute += x;
  }
  const auto& loss = metric(t, "train_loss");
  std::vector<double> finite_loss;
  for (double x : loss)
    if (std::isfinite(x))
      finite_loss.push_back(x);
  const bool short_loss =
      !finite_loss.empty() && finite_loss.size() - finite_loss.size() / 2 < kMinWindowPoints;
  const double wall = attr(t, "wall_seconds");
  // 95th percentile of staleness: the smallest s with at least 95% of updates at or below.
  double stale_total = 0;
  for (std::int64_t c : t.staleness_histogram)
    stale_total += static_cast<double>(c);
  double p95 = kNaN, cumulative = 0;
  for (std::size_t i = 0; i < t.staleness_histogram.size() && stale_total > 0; ++i) {
    cumulative += static_cast<double>(t.staleness_histogram[i]);
    if (cumulative >= 0.95 * stale_total) {
      p95 = static_cast<double>(i);
      break;
    }
  }
  // Staleness: the mean over the whole run, from the histogram.
  double stale_n = 0, stale_sum = 0;
  for (std::size_t i = 0; i < t.staleness_histogram.size(); ++i) {
    stale_n += static_cast<double>(t.staleness_histogram[i]);
    stale_sum += static_cast<double>(i) * static_cast<double>(t.staleness_histogram[i]);
  }
  row.values = {
      s.final_value, s.best_value, last_finite(metric(t, "node_accuracy_mean")),
      last_finite(metric(t, "node_accuracy_min")), t_target, u_target, s.std_second_half,
      s.window_std, s.mean_abs_change, s.oscillation, s.worst_drop,
      finite_loss.empty() || short_loss ? kNaN : std_second_half(finite_loss),
      row.status == "diverged" ? 1.0 : 0.0, last_finite(metric(t, "consensus_distance")),
      last_finite(metric(t, "bytes_sent")), stale_n > 0 ? stale_sum / stale_n : kNaN, p95, wall,
      wall > 0 ? attr(t, "sim_time_s") / wall : kNaN, attr(t, "sim_time_s"), b_target,
      compute > 0 ? idle / compute : kNaN, last_finite(metric(t, "bits_per_coordinate")),
      last_finite(epoch_column(t, "train_loss")),
      // A single epoch's loss is noisy with small batches; the mean over the second half of
      // the epochs compares orders at a fraction of the seed-to-seed spread.
      mean_finite(epoch_column(t, "train_loss"), epoch_column(t, "train_loss").size() / 2),
      last_finite(epoch_column(t, "test_accuracy")), last_finite(epoch_column(t, "herding_bound")),
      // Every orderer runs the same D-RR permutation in the first epoch.
      mean_finite(epoch_column(t, "herding_bound"), 1), attr(t, "order_bytes"),
      interpolate(time, acc, at_time_s)};
  row.missing.assign(row.values.size(), "");
  const auto& cols = run_columns();
  std::string too_few = "<";
  too_few += std::to_string(kMinWindowPoints);
  too_few += " pts";
  auto mark = [&](const char* column, bool why) {
    if (why)
      row.missing[static_cast<std::size_t>(std::find(cols.begin(), cols.end(), column) -
                                           cols.begin())] = too_few;
  };
  for (const char* c : {"acc_std_2nd_half", "acc_mean_abs_change", "acc_oscillation"})
    mark(c, short_half);
  for (const char* c : {"acc_window_std", "acc_worst_drop"})
    mark(c, short_curve);
  mark("train_loss_std", short_loss);
  // A diverged run's last evaluations describe a model on its way to infinity: they are not
  // an accuracy (nor a loss) to average with converged runs' ("diverged" counts it instead).
  if (row.status == "diverged")
    for (const char* c :
         {"final_acc", "best_acc", "node_acc_mean", "node_acc_min", "time_to_target_s",
          "updates_to_target", "acc_std_2nd_half", "acc_window_std", "acc_mean_abs_change",
          "acc_oscillation", "acc_worst_drop", "train_loss_std", "bytes_to_target",
          "epoch_train_loss", "epoch_train_loss_2nd_half", "epoch_test_acc", "acc_at_time"}) {
      const auto k =
          static_cast<std::size_t>(std::find(cols.begin(), cols.end(), c) - cols.begin());
      row.values[k] = kNaN;
      row.missing[k] = "diverged";
    }
  const auto seed = t.number_attributes.find("seed");
  if (seed != t.number_attributes.end())
    row.seed = format_seed(seed->second);
  return row;
}

bool natural_less(const std::vector<std::string>& a, const std::vector<std::string>& b) {
  for (std::size_t k = 0; k < std::min(a.size(), b.size()); ++k) {
    // Numbers by value before any text, text by characters: mixing the two rules within
    // one comparison would not be a strict weak order (2 < 10 < "1x" < 2).
    const auto x = as_number(a[k]), y = as_number(b[k]);
    if (x && y) {
      if (*x != *y)
        return *x < *y;
    } else if (x || y) {
      return x.has_value();
    } else if (a[k] != b[k]) {
      return a[k] < b[k];
    }
  }
  return a.size() < b.size();
}

std::vector<GroupRow> group_rows(const std::vector<RunRow>& rows) {
  std::vector<GroupRow> groups;
  std::vector<std::vector<const RunRow*>> members;
  for (const RunRow& r : rows) {
    auto it = std::find_if(groups.begin(), groups.end(),
                           [&](const GroupRow& g) { return g.group == r.group; });
    if (it == groups.end()) {
      groups.push_back(GroupRow{});
      groups.back().group = r.group;
      members.emplace_back();
      it = groups.end() - 1;
    }
    members[static_cast<std::size_t>(it - groups.begin())].push_back(&r);
    it->members.push_back(static_cast<std::size_t>(&r - rows.data()));
  }
  const std::size_t cols = run_columns().size();
  std::vector<double> column;
  for (std::size_t g = 0; g < groups.size(); ++g) {
    groups[g].runs = members[g].size();
    for (std::size_t c = 0; c < cols; ++c) {
      column.clear();
      for (const RunRow* r : members[g])
        column.push_back(r->values[c]);
      const Summary sum = summarize(column);
      groups[g].mean.push_back(sum.mean);
      groups[g].std.push_back(sum.std);
      groups[g].ci95.push_back(sum.ci95);
      groups[g].counted.push_back(sum.count);
    }
  }
  std::stable_sort(groups.begin(), groups.end(), [](const GroupRow& a, const GroupRow& b) {
    return natural_less(a.group, b.group);
  });
  return groups;
}

std::string format_cell(double mean, double spread, std::size_t counted, std::size_t runs,
                        const std::string& missing_reason) {
  if (!std::isfinite(mean))
    return missing_reason.empty() ? "-" : "- (" + missing_reason + ")";
  char buf[96];
  const bool big = std::fabs(mean) >= 1000;
  int len = 0;
  if (counted > 1 && std::isfinite(spread))
    len = std::snprintf(buf, sizeof buf, big ? "%.0f ± %.0f" : "%.4f ± %.4f", mean, spread);
  else
    len = std::snprintf(buf, sizeof buf, big ? "%.0f" : "%.4f", mean);
  if (counted < runs)
    std::snprintf(buf + len, sizeof buf - static_cast<std::size_t>(len), " (%zu/%zu)", counted,
                  runs);
  return buf;
}

} // namespace dtsim::analysis

namespace dtsim::analysis {

std::string missing_reason(const GroupRow& g, const std::vector<RunRow>& rows, std::size_t column) {
  for (std::size_t i : g.members)
    if (!rows[i].missing.empty() && !rows[i].missing[column].empty())
      return rows[i].missing[column];
  return "";
}

PairedDifference paired_difference(const GroupRow& g, const GroupRow& b,
                                   const std::vector<RunRow>& rows, std::size_t column) {
  std::vector<double> method, baseline;
  for (std::size_t i : g.members)
    for (std::size_t j : b.members)
      if (!rows[i].seed.empty() && rows[i].seed == rows[j].seed) {
        method.push_back(rows[i].values[column]);
        baseline.push_back(rows[j].values[column]);
        break;
      }
  const Summary d = analysis::paired_difference(method, baseline);
  return {d.mean, d.ci95, d.count};
}

} // namespace dtsim::analysis
