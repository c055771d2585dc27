// SPDX-License-Identifier: MIT
// Reference counting and recycling of pooled buffers.
#include "sim/engine/shared_buffer.hpp"

#include "sim/core/errors.hpp"

#include <utility>

namespace dtsim {

SharedBuffer::SharedBuffer(Slot* slot) : slot_(slot) {
  ++slot_->refs;
}

void SharedBuffer::recycle() {
  Storage* storage = slot_->storage;
  storage->free.push_back(slot_);
  Storage::release(storage); // the slot no longer keeps it
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
    : size_(floats_per_buffer), storage_(new SharedBuffer::Storage) {}

BufferPool::BufferPool(BufferPool&& o) noexcept : size_(o.size_), storage_(o.storage_) {
  o.storage_ = nullptr;
}

BufferPool& BufferPool::operator=(BufferPool&& o) noexcept {
  std::swap(size_, o.size_);
  std::swap(storage_, o.storage_);
  return *this; // o, destroyed, lets go of the old storage
}

BufferPool::~BufferPool() {
  if (storage_)
    SharedBuffer::Storage::release(storage_);
}

std::size_t BufferPool::buffers_allocated() const {
  return storage_->slots.size();
}

SharedBuffer BufferPool::acquire() {
  auto& st = *storage_;
  if (st.free.empty()) {
    SharedBuffer::Slot& slot = st.slots.emplace_back();
    slot.data.resize(static_cast<Eigen::Index>(size_));
    slot.id = static_cast<std::uint32_t>(st.slots.size() - 1);
    slot.storage = storage_;
    st.free.push_back(&slot);
  }
  SharedBuffer::Slot* s = st.free.back();
  st.free.pop_back();
  ++st.owners; // the slot in use keeps the storage
  return SharedBuffer(s);
}

} // namespace dtsim
