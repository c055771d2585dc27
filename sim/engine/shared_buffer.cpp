// SPDX-License-Identifier: MIT
// Reference counting and recycling of pooled buffers.
#include "sim/engine/shared_buffer.hpp"

#include "sim/core/errors.hpp"

namespace dtsim {

SharedBuffer::SharedBuffer(BufferPool* pool, Slot* slot) : pool_(pool), slot_(slot) {
  ++slot_->refs;
}

SharedBuffer::SharedBuffer(const SharedBuffer& o) : pool_(o.pool_), slot_(o.slot_) {
  if (slot_)
    ++slot_->refs;
}

SharedBuffer::SharedBuffer(SharedBuffer&& o) noexcept : pool_(o.pool_), slot_(o.slot_) {
  o.pool_ = nullptr;
  o.slot_ = nullptr;
}

SharedBuffer& SharedBuffer::operator=(SharedBuffer o) noexcept {
  std::swap(pool_, o.pool_);
  std::swap(slot_, o.slot_);
  return *this;
}

SharedBuffer::~SharedBuffer() {
  if (slot_ && --slot_->refs == 0)
    pool_->release(slot_);
}

std::span<const float> SharedBuffer::view() const {
  DTSIM_ASSERT(slot_, "empty SharedBuffer");
  return {slot_->data.data(), static_cast<std::size_t>(slot_->data.size())};
}

std::span<float> SharedBuffer::data() {
  DTSIM_ASSERT(slot_ && slot_->refs == 1, "SharedBuffer written after it was shared");
  return {slot_->data.data(), static_cast<std::size_t>(slot_->data.size())};
}

int SharedBuffer::use_count() const { return slot_ ? slot_->refs : 0; }

SharedBuffer BufferPool::acquire() {
  if (free_.empty()) {
    slots_.push_back(std::make_unique<SharedBuffer::Slot>());
    slots_.back()->data.resize(static_cast<Eigen::Index>(size_));
    free_.push_back(slots_.back().get());
  }
  SharedBuffer::Slot* s = free_.back();
  free_.pop_back();
  return SharedBuffer(this, s);
}

void BufferPool::release(SharedBuffer::Slot* s) { free_.push_back(s); }

} // namespace dtsim
