// SPDX-License-Identifier: MIT
// CD-GraB: workers' pair differences, the coordinator's shared balancing, signs back.
#include "sim/optimizers/ordering/cd_grab_order.hpp"

#include "models/model.hpp"
#include "sim/core/errors.hpp"

#include <algorithm>

namespace dtsim {

CdGrabOrder::Worker::Worker(std::vector<std::uint32_t> first) : orders(std::move(first)) {}

CdGrabOrder::CdGrabOrder(const Params& p, const OrderSetup& setup)
    : dim_(setup.model->num_params()), nodes_(setup.nodes), max_pairs_((setup.batch_size + 1) / 2),
      server_s_per_pair_(
          p.number("server_s_per_pair", 1.2e-9 * static_cast<double>(dim_), Range::seconds())),
      separate_(p.choice("coordinator", "server", {"server", "separate"}) == "separate"),
      server_(dim_) {
  workers_.reserve(static_cast<std::size_t>(nodes_));
  for (int i = 0; i < nodes_; ++i) {
    workers_.emplace_back(initial_order(setup, i));
    Worker& w = workers_.back();
    w.cached.resize(static_cast<Eigen::Index>(dim_));
    w.ring.resize(2);
    for (StepRecord& r : w.ring) {
      r.first.resize(static_cast<std::size_t>(max_pairs_));
      r.second.resize(static_cast<std::size_t>(max_pairs_));
      r.first_col.resize(static_cast<std::size_t>(max_pairs_));
      r.second_col.resize(static_cast<std::size_t>(max_pairs_));
      r.signs.resize(static_cast<std::size_t>(max_pairs_));
      r.diffs.resize(static_cast<Eigen::Index>(dim_), max_pairs_);
    }
  }
  arrivals_.reserve(16);
}

std::string CdGrabOrder::describe() const {
  return "cd-grab (one coordinator running sum over all workers' pairs, " +
         std::string(separate_ ? "on its own machine, " : "on the server's machine, ") +
         format_number(server_s_per_pair_) + " s per pair)";
}

CdGrabOrder::StepRecord& CdGrabOrder::record(Worker& w, std::int64_t step) {
  DTSIM_ASSERT(w.count > 0, "CD-GraB: no step record pending");
  const std::int64_t index = step - w.ring[w.head].step;
  DTSIM_ASSERT(index >= 0 && static_cast<std::size_t>(index) < w.count,
               "CD-GraB: step record out of range");
  return w.ring[(w.head + static_cast<std::size_t>(index)) % w.ring.size()];
}

CdGrabOrder::StepRecord& CdGrabOrder::push_record(Worker& w) {
  if (w.count == w.ring.size()) {
    // Rare (the coordinator lags more steps than ever before): grow, oldest first. Only on
    // the engine thread while this worker computes nothing, so no task holds a record.
    std::vector<StepRecord> grown(2 * w.ring.size());
    for (std::size_t k = 0; k < w.count; ++k)
      grown[k] = std::move(w.ring[(w.head + k) % w.ring.size()]);
    for (std::size_t k = w.count; k < grown.size(); ++k) {
      StepRecord& r = grown[k];
      r.first.resize(static_cast<std::size_t>(max_pairs_));
      r.second.resize(static_cast<std::size_t>(max_pairs_));
      r.first_col.resize(static_cast<std::size_t>(max_pairs_));
      r.second_col.resize(static_cast<std::size_t>(max_pairs_));
      r.signs.resize(static_cast<std::size_t>(max_pairs_));
      r.diffs.resize(static_cast<Eigen::Index>(dim_), max_pairs_);
    }
    w.ring.swap(grown);
    w.head = 0;
  }
  StepRecord& r = w.ring[(w.head + w.count) % w.ring.size()];
  ++w.count;
  r.step = w.steps_drawn++;
  r.num_pairs = 0;
  r.carry_col = -1;
  r.ends_epoch = false;
  return r;
}

int CdGrabOrder::next_batch(OrderChannel& channel, int node, std::span<std::uint32_t> out) {
  Worker& w = workers_[static_cast<std::size_t>(node)];
  if (w.orders.drawn_all()) {
    if (!w.orders.next_complete()) {
      if (!w.waiting) {
        w.waiting = true;
        w.wait_since = channel.now();
      }
      return 0;
    }
    DTSIM_ASSERT(!w.has_cached, "CD-GraB: a pair straddles two epochs");
    w.orders.advance();
  }
  const auto ids = w.orders.draw(out.size());
  std::copy(ids.begin(), ids.end(), out.begin());
  StepRecord& r = push_record(w);
  r.ends_epoch = w.orders.drawn_all();
  // Pair consecutive examples of the worker's stream; -1 marks the cached first example of
  // a pair begun in an earlier step, -2 that no pair is open.
  int open = w.has_cached ? -1 : -2;
  std::uint32_t open_id = w.cached_id;
  for (std::size_t k = 0; k < ids.size(); ++k) {
    if (open == -2) {
      open = static_cast<int>(k);
      open_id = ids[k];
      continue;
    }
    const auto p = static_cast<std::size_t>(r.num_pairs++);
    r.first[p] = open_id;
    r.first_col[p] = open;
    r.second[p] = ids[k];
    r.second_col[p] = static_cast<int>(k);
    open = -2;
  }
  w.has_cached = false;
  if (open >= 0) {
    if (r.ends_epoch) {
      w.orders.place_middle(open_id);
    } else {
      r.carry_col = open;
      w.cached_id = open_id;
      w.has_cached = true;
    }
  }
  w.task_record = &r;
  return static_cast<int>(ids.size());
}

void CdGrabOrder::observe(int node, std::span<const std::uint32_t>,
                          std::span<const float> per_example) {
  Worker& w = workers_[static_cast<std::size_t>(node)];
  StepRecord& r = *w.task_record;
  auto column = [&](int k) {
    return as_vec(per_example.subspan(static_cast<std::size_t>(k) * dim_, dim_));
  };
  for (int p = 0; p < r.num_pairs; ++p) {
    const auto q = static_cast<std::size_t>(p);
    if (r.first_col[q] < 0)
      r.diffs.col(p) = column(r.second_col[q]) - w.cached;
    else
      r.diffs.col(p) = column(r.second_col[q]) - column(r.first_col[q]);
  }
  if (r.carry_col >= 0)
    w.cached = column(r.carry_col);
}

void CdGrabOrder::on_gradient_ready(OrderChannel& channel, int node) {
  Worker& w = workers_[static_cast<std::size_t>(node)];
  const StepRecord& r = record(w, w.steps_sent);
  const std::int64_t bytes = kHeaderBytes + static_cast<std::int64_t>(r.num_pairs) *
                                                static_cast<std::int64_t>(dim_ * sizeof(float));
  w.bytes_sent += static_cast<double>(bytes);
  ++w.steps_sent;
  channel.send(node, channel.coordinator(), bytes, kDifferences, r.step);
}

void CdGrabOrder::on_message(OrderChannel& channel, const OrderMessage& msg) {
  if (msg.tag == kDifferences) {
    DTSIM_ASSERT(msg.dst == channel.coordinator(), "CD-GraB differences go to the coordinator");
    const std::int64_t index = msg.arg - next_step_;
    DTSIM_ASSERT(index >= 0, "CD-GraB differences of a step already balanced");
    if (arrivals_.size() <= static_cast<std::size_t>(index))
      arrivals_.resize(static_cast<std::size_t>(index) + 1, 0);
    ++arrivals_[static_cast<std::size_t>(index)];
    try_serve(channel);
    return;
  }
  DTSIM_ASSERT(msg.tag == kSigns && msg.dst < nodes_, "CD-GraB: unexpected message");
  const int node = msg.dst;
  Worker& w = workers_[static_cast<std::size_t>(node)];
  StepRecord& r = w.ring[w.head];
  DTSIM_ASSERT(w.count > 0 && r.step == msg.arg, "CD-GraB signs out of order");
  for (int p = 0; p < r.num_pairs; ++p) {
    const auto q = static_cast<std::size_t>(p);
    w.orders.place_pair(r.first[q], r.second[q], r.signs[q] != 0);
  }
  w.head = (w.head + 1) % w.ring.size();
  --w.count;
  if (w.waiting && w.orders.next_complete()) {
    w.waiting = false;
    w.wait_s += (channel.now() - w.wait_since).seconds();
    channel.release(node); // re-enters next_batch: nothing of `w` is used after this
  }
}

SimTime CdGrabOrder::service_time(std::int64_t step) {
  std::int64_t pairs = 0;
  for (Worker& w : workers_)
    pairs += record(w, step).num_pairs;
  return SimTime::from_seconds(server_s_per_pair_ * static_cast<double>(pairs));
}

void CdGrabOrder::try_serve(OrderChannel& channel) {
  if (busy_ || arrivals_.empty() || arrivals_.front() < nodes_)
    return;
  busy_ = true;
  const SimTime t = service_time(next_step_);
  server_busy_s_ += t.seconds();
  channel.set_timer(channel.coordinator(), t, next_step_);
}

void CdGrabOrder::on_timer(OrderChannel& channel, int endpoint, std::int64_t tag) {
  DTSIM_ASSERT(busy_ && endpoint == channel.coordinator() && tag == next_step_,
               "CD-GraB: unexpected coordinator timer");
  int most = 0;
  bool all_end = true;
  for (Worker& w : workers_) {
    const StepRecord& r = record(w, next_step_);
    most = std::max(most, r.num_pairs);
    all_end = all_end && r.ends_epoch;
  }
  // Pair p of worker 0..n-1, then pair p+1: the fixed order of the shared running sum.
  for (int p = 0; p < most; ++p)
    for (Worker& w : workers_) {
      StepRecord& r = record(w, next_step_);
      if (p < r.num_pairs) {
        r.signs[static_cast<std::size_t>(p)] =
            server_.step_difference({r.diffs.col(p).data(), dim_}) ? 1 : 0;
        ++pairs_balanced_;
      }
    }
  // Every worker's epoch ends at this step: the next epoch's herding starts from zero (with
  // unequal node sizes the sum carries on across the workers' staggered epoch ends).
  if (all_end)
    server_.reset();
  for (int j = 0; j < nodes_; ++j) {
    const StepRecord& r = record(workers_[static_cast<std::size_t>(j)], next_step_);
    channel.send(channel.coordinator(), j, kHeaderBytes + (r.num_pairs + 7) / 8, kSigns,
                 next_step_);
  }
  ++next_step_;
  arrivals_.erase(arrivals_.begin());
  busy_ = false;
  try_serve(channel);
}

std::span<const std::uint32_t> CdGrabOrder::epoch_order(int node, std::int64_t epoch) const {
  return workers_[static_cast<std::size_t>(node)].orders.order_of(epoch);
}

std::size_t CdGrabOrder::state_bytes() const {
  std::size_t bytes = server_.state_bytes();
  for (const Worker& w : workers_) {
    bytes += w.orders.state_bytes() + sizeof(float) * static_cast<std::size_t>(w.cached.size());
    for (const StepRecord& r : w.ring)
      bytes += sizeof(float) * static_cast<std::size_t>(r.diffs.size()) +
               (2 * sizeof(std::uint32_t) + 2 * sizeof(int) + 1) * r.signs.size();
  }
  return bytes;
}

void CdGrabOrder::add_metrics(std::vector<std::pair<std::string, double>>& columns) const {
  double wait = 0;
  for (const Worker& w : workers_)
    wait += w.wait_s;
  columns.emplace_back("order_wait_s", wait);
  columns.emplace_back("order_server_busy_s", server_busy_s_);
}

void CdGrabOrder::add_node_columns(
    std::vector<std::pair<std::string, std::vector<double>>>& columns) const {
  std::vector<double> wait, bytes;
  for (const Worker& w : workers_) {
    wait.push_back(w.wait_s);
    bytes.push_back(w.bytes_sent);
  }
  columns.emplace_back("order_wait_s", std::move(wait));
  columns.emplace_back("order_bytes_sent", std::move(bytes));
}

} // namespace dtsim
