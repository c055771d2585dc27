// SPDX-License-Identifier: MIT
// Drawing the current order, filling the next one from both ends.
#include "sim/optimizers/ordering/epoch_orders.hpp"

#include "sim/core/errors.hpp"

#include <algorithm>

namespace dtsim {

EpochOrders::EpochOrders(std::vector<std::uint32_t> first)
    : order_(std::move(first)), next_(order_.size()), back_(order_.size()) {
  DTSIM_ASSERT(!order_.empty(), "a node without training examples");
  previous_.reserve(order_.size());
}

std::span<const std::uint32_t> EpochOrders::draw(std::size_t max) {
  const std::size_t n = std::min(max, order_.size() - pos_);
  const auto out = std::span<const std::uint32_t>(order_).subspan(pos_, n);
  pos_ += n;
  return out;
}

std::span<const std::uint32_t> EpochOrders::order_of(std::int64_t e) const {
  if (e < epoch_ && !previous_.empty())
    return previous_;
  return order_;
}

void EpochOrders::place_front(std::uint32_t id) {
  DTSIM_ASSERT(front_ < back_, "next order is already full");
  next_[front_++] = id;
  ++placed_;
}

void EpochOrders::place_back(std::uint32_t id) {
  DTSIM_ASSERT(front_ < back_, "next order is already full");
  next_[--back_] = id;
  ++placed_;
}

void EpochOrders::place_pair(std::uint32_t first, std::uint32_t second, bool first_to_front) {
  DTSIM_ASSERT(front_ + 1 < back_, "no room for a pair in the next order");
  next_[front_++] = first_to_front ? first : second;
  next_[--back_] = first_to_front ? second : first;
  placed_ += 2;
}

void EpochOrders::place_middle(std::uint32_t id) {
  DTSIM_ASSERT(order_.size() % 2 == 1, "only an odd-sized epoch has a middle slot");
  next_[order_.size() / 2] = id;
  ++placed_;
}

void EpochOrders::advance() {
  DTSIM_ASSERT(drawn_all() && next_complete(), "advance() before the epoch's end");
  previous_.assign(order_.begin(), order_.end()); // reserved: no allocation
  order_.swap(next_);
  pos_ = 0;
  front_ = 0;
  back_ = order_.size();
  placed_ = 0;
  ++epoch_;
}

std::size_t EpochOrders::state_bytes() const {
  return sizeof(std::uint32_t) * (order_.capacity() + next_.capacity() + previous_.capacity());
}

} // namespace dtsim
