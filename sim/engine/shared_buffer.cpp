// SPDX-License-Identifier: MIT
// Reference counting and recycling of pooled buffers.
#include "sim/engine/shared_buffer.hpp"

#include "sim/core/errors.hpp"

namespace dtsim {

SharedBuffer::SharedBuffer(std::shared_ptr<Storage> storage, Slot* slot)
    : storage_(std::move(storage)), slot_(slot) {
  ++slot_->refs;
}

SharedBuffer::SharedBuffer(const SharedBuffer& o) : storage_(o.storage_), slot_(o.slot_) {
  if (slot_)
    ++slot_->refs;
}

SharedBuffer::SharedBuffer(SharedBuffer&& o) noexcept
    : storage_(std::move(o.storage_)), slot_(o.slot_) {
  o.slot_ = nullptr;
}

SharedBuffer& SharedBuffer::operator=(SharedBuffer o) noexcept {
  std::swap(storage_, o.storage_);
  std::swap(slot_, o.slot_);
  return *this;
}

SharedBuffer::~SharedBuffer() {
  if (slot_ && --slot_->refs == 0)
    storage_->free.push_back(slot_);
}

std::span<const float> SharedBuffer::view() const {
  DTSIM_ASSERT(slot_, "empty SharedBuffer");
  return {slot_->data.data(), static_cast<std::size_t>(slot_->data.size())};
}

std::span<float> SharedBuffer::data() {
  DTSIM_ASSERT(slot_ && slot_->refs == 1, "SharedBuffer written after it was shared");
  return {slot_->data.data(), static_cast<std::size_t>(slot_->data.size())};
}

int SharedBuffer::use_count() const {
  return slot_ ? slot_->refs : 0;
}

std::uint32_t SharedBuffer::id() const {
  DTSIM_ASSERT(slot_, "empty SharedBuffer");
  return slot_->id;
}

BufferPool::BufferPool(std::size_t floats_per_buffer)
    : size_(floats_per_buffer), storage_(std::make_shared<SharedBuffer::Storage>()) {}

std::size_t BufferPool::buffers_allocated() const {
  return storage_->slots.size();
}

SharedBuffer BufferPool::acquire() {
  auto& st = *storage_;
  if (st.free.empty()) {
    st.slots.push_back(std::make_unique<SharedBuffer::Slot>());
    st.slots.back()->data.resize(static_cast<Eigen::Index>(size_));
    st.slots.back()->id = static_cast<std::uint32_t>(st.slots.size() - 1);
    st.free.push_back(st.slots.back().get());
  }
  SharedBuffer::Slot* s = st.free.back();
  st.free.pop_back();
  return SharedBuffer(storage_, s);
}

} // namespace dtsim
