// SPDX-License-Identifier: MIT
// Who waits for whom in pairwise gossip, and the requests a waiting node holds back.
#pragma once

#include "sim/engine/message.hpp"

#include <deque>
#include <vector>

namespace dtsim {

// An initiator sends its model to one partner and waits for the reply; its own model must
// not change meanwhile, or the pair's average would not be atomic. So a request that reaches
// a waiting node is held back (FIFO) and served once the node's own interaction is done. If
// holding it back would close a cycle of nodes each waiting for the next (i waits for j,
// j for k, k for i: a deadlock), the request must be served at once instead; the node is
// then "disturbed" and completes its own interaction in a form that still conserves the sum
// of the models (see the algorithms). Without such cycles every interaction is atomic.
class PairwiseLocks {
public:
  explicit PairwiseLocks(int nodes);

  void begin(int node, int partner); // node sent a request to partner and now waits
  void served(int node);             // node's request was served; its reply is on the way
  void end(int node);                // node handled its reply
  bool waiting(int node) const { return state_[idx(node)].waiting; }
  bool disturbed(int node) const { return state_[idx(node)].disturbed; }
  void mark_disturbed(int node) { state_[idx(node)].disturbed = true; }

  // A request from `from` reached `node`, which is waiting: true if holding it back would
  // close a cycle of waiting nodes.
  bool closes_cycle(int node, int from) const;

  void hold(const Message& request); // at request.dst
  bool has_held(int node) const { return !state_[idx(node)].held.empty(); }
  Message take_held(int node);

private:
  struct NodeLock {
    bool waiting = false;
    bool disturbed = false;
    int blocked_on = -1; // the partner whose reply it waits for, until that partner serves it
    std::deque<Message> held;
  };
  static std::size_t idx(int node) { return static_cast<std::size_t>(node); }
  std::vector<NodeLock> state_;
};

} // namespace dtsim
