// SPDX-License-Identifier: MIT
// EpochOrders: one node's current epoch order and the next one being built by balancing.
#pragma once

#include <cstddef>
#include <cstdint>
#include <span>
#include <vector>

namespace dtsim {

// The order being executed (drawn batch by batch, never past the epoch's end, so an epoch
// ends with a short batch when the batch size does not divide it), the next order that
// balancing fills from both ends (front++ / back--, docs/algorithms.md, section 7), and the order
// executed in the epoch before. advance() makes the next order current.
// Invariant: placed() counts distinct positions of the next order written so far.
class EpochOrders {
public:
  // `first` is epoch 0's order (a permutation of the node's examples, non-empty).
  explicit EpochOrders(std::vector<std::uint32_t> first);

  std::size_t size() const { return order_.size(); }
  std::int64_t epoch() const { return epoch_; }
  // Up to `max` ids following the last drawn one; empty once the epoch is drawn.
  std::span<const std::uint32_t> draw(std::size_t max);
  bool drawn_all() const { return pos_ == order_.size(); }
  std::span<const std::uint32_t> current() const { return order_; }
  // The order of local epoch e: current, or the previous one for e < epoch() (if any).
  std::span<const std::uint32_t> order_of(std::int64_t e) const;

  void place_front(std::uint32_t id);
  void place_back(std::uint32_t id);
  // (first, second) at (front, back) when first_to_front, else (second, first); then
  // front++, back-- (one PairBalance / CD-GraB step).
  void place_pair(std::uint32_t first, std::uint32_t second, bool first_to_front);
  // The single odd example of an odd-sized epoch: the middle slot, which pairs never use.
  void place_middle(std::uint32_t id);
  std::size_t placed() const { return placed_; }
  bool next_complete() const { return placed_ == order_.size(); }
  std::span<const std::uint32_t> next() const { return next_; }

  // requires: drawn_all() and next_complete().
  void advance();
  std::size_t state_bytes() const;

private:
  std::vector<std::uint32_t> order_;
  std::vector<std::uint32_t> next_;
  std::vector<std::uint32_t> previous_; // empty during epoch 0
  std::size_t pos_ = 0;
  std::size_t front_ = 0;
  std::size_t back_ = 0; // one past the next back slot
  std::size_t placed_ = 0;
  std::int64_t epoch_ = 0;
};

} // namespace dtsim
