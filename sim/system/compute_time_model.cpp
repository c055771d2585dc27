// SPDX-License-Identifier: MIT
// Compute-time distributions, heterogeneous speeds and stragglers.
#include "sim/system/compute_time_model.hpp"

#include "sim/core/text_rows.hpp"

#include <algorithm>
#include <cmath>
#include <numeric>

namespace dtsim {

std::vector<std::pair<std::string, std::string>> compute_distributions() {
  return {{"constant", "every minibatch takes mean_s"},
          {"normal", "mean_s * (1 + sigma * N(0,1)), truncated at 1% of mean_s"},
          {"lognormal", "log-normal with mean mean_s and log-std sigma"},
          {"exponential", "exponential with mean mean_s"},
          {"gamma", "gamma with shape k and mean mean_s"},
          {"trace", "per-node minibatch times replayed from a file (compute.file)"}};
}

ComputeTimeModel::ComputeTimeModel(const Params& p, int nodes, std::uint64_t seed) {
  std::vector<std::string> names;
  for (const auto& [name, help] : compute_distributions())
    names.push_back(name);
  const std::string dist = p.choice("dist", "constant", names);
  if (dist != "trace")
    // At least 1 ns, the clock's step: a shorter mean would make every step take no time.
    mean_s_ = p.number("mean_s", 0.05, Range::between(1e-9, SimTime::kMaxKeySeconds));
  if (dist == "trace") {
    dist_ = Dist::Trace;
    read_trace(p, nodes);
  } else if (dist == "constant") {
    dist_ = Dist::Constant;
  } else if (dist == "normal") {
    dist_ = Dist::Normal;
    sigma_ = p.number("sigma", 0.1, Range::non_negative());
  } else if (dist == "lognormal") {
    dist_ = Dist::Lognormal;
    sigma_ = p.number("sigma", 0.3, Range::between(0.0, 5.0));
  } else if (dist == "exponential") {
    dist_ = Dist::Exponential;
  } else {
    dist_ = Dist::Gamma;
    shape_ = p.number("shape", 2.0, Range::positive());
  }

  const auto n = static_cast<std::size_t>(nodes);
  speed_.assign(n, 1.0);
  if (p.has("speed_factors")) {
    speed_ = p.numbers("speed_factors", {}, Range::positive());
    if (speed_.size() != n)
      p.fail("speed_factors", "expected " + std::to_string(n) + " values (one per node), got " +
                                  std::to_string(speed_.size()));
  } else {
    const auto range = p.numbers("speed_range", {1.0, 1.0}, Range::positive());
    if (range.size() != 2 || range[0] > range[1])
      p.fail("speed_range", "expected [lo, hi] with 0 < lo <= hi");
    Rng rng = Rng::stream(seed, "compute-speed", Rng::kNoNode);
    for (double& s : speed_)
      s = range[0] == range[1] ? range[0] : rng.uniform(range[0], range[1]);
  }

  const Params st = p.child("stragglers");
  straggler_fraction_ = st.number("fraction", 0.0, Range::unit());
  slowdown_ = st.number("slowdown", 5.0, Range::at_least(1.0));
  transient_ = st.choice("mode", "permanent", {"permanent", "transient"}) == "transient";
  slow_.assign(n, false);
  if (!transient_) {
    const auto count = static_cast<std::size_t>(std::lround(straggler_fraction_ * nodes));
    std::vector<std::size_t> order(n);
    std::iota(order.begin(), order.end(), std::size_t{0});
    Rng rng = Rng::stream(seed, "stragglers", Rng::kNoNode);
    rng.shuffle(order);
    for (std::size_t k = 0; k < std::min(count, n); ++k)
      slow_[order[k]] = true;
  }
  for (int i = 0; i < nodes; ++i)
    rngs_.push_back(Rng::stream(seed, "compute", static_cast<std::uint64_t>(i)));
  read_failures(p, nodes);
}

void ComputeTimeModel::read_trace(const Params& p, int nodes) {
  const std::string path = p.file_path("file");
  const auto rows = read_text_rows(path);
  if (!rows)
    p.fail("file", "cannot open compute-time trace " + path + " (CSV rows 'node,seconds')");
  trace_.assign(static_cast<std::size_t>(nodes), {});
  trace_pos_.assign(static_cast<std::size_t>(nodes), 0);
  double sum = 0.0;
  std::size_t count = 0;
  for (const TextRow& r : *rows) {
    const bool pair = r.fields.size() == 2;
    const auto node = pair ? parse_integer(r.fields[0]) : std::nullopt;
    const auto seconds = pair ? parse_number(r.fields[1]) : std::nullopt;
    const std::string where = path + ":" + std::to_string(r.line) + ": ";
    if (!node || !seconds) {
      // A header names the two columns: two fields, neither a number. Anything else on the
      // first line is a broken row, not a header to skip.
      if (r.line == 1 && pair && !parse_number(r.fields[0]) && !parse_number(r.fields[1]))
        continue;
      p.fail("file", where + "expected 'node,seconds', got '" + r.text + "'");
    }
    // value_or: the values are there (fail does not return); GCC 12 cannot see it.
    const long long id = node.value_or(-1);
    const double secs = seconds.value_or(0.0);
    if (id < 0 || id >= nodes)
      p.fail("file", where + "node " + std::to_string(id) + " out of range [0, " +
                         std::to_string(nodes - 1) + "]");
    if (!(secs > 0) || !std::isfinite(secs))
      p.fail("file", where + "expected seconds > 0, got " + format_number(secs));
    trace_[static_cast<std::size_t>(id)].push_back(secs);
    sum += secs;
    ++count;
  }
  for (int i = 0; i < nodes; ++i)
    if (trace_[static_cast<std::size_t>(i)].empty())
      p.fail("file", path + ": no durations for node " + std::to_string(i) + " (every node " +
                         "needs at least one row)");
  mean_s_ = sum / static_cast<double>(count);
}

void ComputeTimeModel::read_failures(const Params& p, int nodes) {
  outages_.assign(static_cast<std::size_t>(nodes), {});
  for (const Params& f : p.maps("failures")) {
    const auto node = f.integer("node", Range::between(0, nodes - 1));
    const double from = f.number("from_s", Range::seconds());
    const double to = f.number("to_s", Range::seconds(true));
    if (to <= from)
      f.fail("to_s",
             "expected to_s > from_s = " + format_number(from) + ", got " + format_number(to));
    outages_[static_cast<std::size_t>(node)].push_back(
        {SimTime::from_seconds(from), SimTime::from_seconds(to)});
  }
  // Overlapping windows of one node merge into one.
  for (auto& list : outages_) {
    std::sort(list.begin(), list.end(),
              [](const Outage& a, const Outage& b) { return a.from < b.from; });
    std::vector<Outage> merged;
    for (const Outage& o : list) {
      if (!merged.empty() && o.from <= merged.back().to)
        merged.back().to = std::max(merged.back().to, o.to);
      else
        merged.push_back(o);
    }
    list = std::move(merged);
  }
}

SimTime ComputeTimeModel::stretch(int node, SimTime start, SimTime work) const {
  SimTime t = start;
  SimTime left = work;
  for (const Outage& o : outages_[static_cast<std::size_t>(node)]) {
    if (o.to <= t)
      continue;
    if (o.from > t) {
      const SimTime run = std::min(left, o.from - t);
      t = t + run;
      left = left - run;
      if (left.ns() == 0)
        break;
    }
    t = std::max(t, o.to);
  }
  return t + left - start;
}

double ComputeTimeModel::base_draw(int node, Rng& rng) {
  switch (dist_) {
  case Dist::Trace: {
    const auto i = static_cast<std::size_t>(node);
    const auto& rows = trace_[i];
    const double t = rows[trace_pos_[i]];
    trace_pos_[i] = (trace_pos_[i] + 1) % rows.size();
    return t;
  }
  case Dist::Constant:
    return mean_s_;
  case Dist::Normal:
    return std::max(0.01 * mean_s_, mean_s_ * (1.0 + sigma_ * rng.normal()));
  case Dist::Lognormal:
    // mu chosen so that the mean (not the median) is mean_s.
    return std::exp(std::log(mean_s_) - 0.5 * sigma_ * sigma_ + sigma_ * rng.normal());
  case Dist::Exponential:
    return rng.exponential(mean_s_);
  case Dist::Gamma:
    return rng.gamma(shape_) * mean_s_ / shape_;
  }
  return mean_s_;
}

SimTime ComputeTimeModel::sample(int node, SimTime start) {
  const auto i = static_cast<std::size_t>(node);
  Rng& rng = rngs_[i];
  double t = base_draw(node, rng) * speed_[i];
  const bool slow = transient_ ? rng.bernoulli(straggler_fraction_) : slow_[i];
  if (slow)
    t *= slowdown_;
  // At least 1 ns so that a gradient never completes at the instant it starts.
  const SimTime work = SimTime::from_ns(std::max<std::int64_t>(1, SimTime::from_seconds(t).ns()));
  return stretch(node, start, work);
}

} // namespace dtsim
