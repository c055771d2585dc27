// SPDX-License-Identifier: MIT
// Waiting initiators, held requests and deadlock cycles.
#include "sim/optimizers/pairwise_locks.hpp"

#include "sim/core/errors.hpp"

namespace dtsim {

PairwiseLocks::PairwiseLocks(int nodes) : state_(static_cast<std::size_t>(nodes)) {}

void PairwiseLocks::begin(int node, int partner) {
  NodeLock& s = state_[idx(node)];
  DTSIM_ASSERT(!s.waiting, "a node started a second interaction while waiting");
  s.waiting = true;
  s.disturbed = false;
  s.blocked_on = partner;
}

void PairwiseLocks::served(int node) {
  state_[idx(node)].blocked_on = -1;
}

void PairwiseLocks::end(int node) {
  NodeLock& s = state_[idx(node)];
  s.waiting = false;
  s.disturbed = false;
  s.blocked_on = -1;
}

bool PairwiseLocks::closes_cycle(int node, int from) const {
  // Each waiting node waits for at most one other, so the waits form chains; follow the one
  // from `node`. A chain may also run into a cycle that does not pass through `from`: its
  // requests are still in flight (requests sent at one instant arrive after it), and the
  // first of them to arrive finds and breaks it. Holding this request back is then safe.
  int x = node;
  for (std::size_t steps = 0; steps < state_.size(); ++steps) {
    const int next = state_[idx(x)].blocked_on;
    if (next < 0)
      return false;
    if (next == from)
      return true;
    x = next;
  }
  return false;
}

void PairwiseLocks::hold(const Message& request) {
  state_[idx(request.dst)].held.push_back(request);
}

Message PairwiseLocks::take_held(int node) {
  NodeLock& s = state_[idx(node)];
  Message m = std::move(s.held.front());
  s.held.pop_front();
  return m;
}

} // namespace dtsim
