// SPDX-License-Identifier: MIT
// Pooled, reference-counted float buffers: message payloads without allocation per message.
#pragma once

#include "sim/core/flat_vector.hpp"

#include <cstdint>
#include <deque>
#include <memory>
#include <span>
#include <utility>
#include <vector>

namespace dtsim {

class BufferPool;

// A handle to one pooled vector. Copies share the buffer; the last handle returns it to the
// pool. Reference counts change on the engine thread only (so they need no atomics); tasks
// may read a buffer that a live handle keeps alive. Writable only through `data()` before it
// is shared. Handles keep the pool's storage alive, so an algorithm may outlive the simulator
// that made its buffers. One pointer: events and inboxes hold many.
class SharedBuffer {
public:
  SharedBuffer() = default;
  // Inline: events and inboxes copy and drop handles at every message (the engine's hot path).
  SharedBuffer(const SharedBuffer& o);
  SharedBuffer(SharedBuffer&& o) noexcept : slot_(o.slot_) { o.slot_ = nullptr; }
  SharedBuffer& operator=(SharedBuffer o) noexcept {
    std::swap(slot_, o.slot_);
    return *this;
  }
  ~SharedBuffer();

  explicit operator bool() const { return slot_ != nullptr; }
  std::span<const float> view() const;
  std::span<float> data(); // requires: the only handle (not yet sent)
  int use_count() const;
  // The buffer's slot in its pool, stable for the pool's life: how a backend that keeps the
  // payloads itself (a resident one, whose pool holds no floats) names them.
  std::uint32_t id() const;

private:
  friend class BufferPool;
  struct Slot;
  struct Storage;
  explicit SharedBuffer(Slot* slot);
  void recycle(); // the last handle let go: the slot goes back to its pool
  Slot* slot_ = nullptr;
};

// Owns every buffer; grows to the peak number alive at once, then never allocates again.
class BufferPool {
public:
  explicit BufferPool(std::size_t floats_per_buffer);
  BufferPool(BufferPool&& o) noexcept;
  BufferPool& operator=(BufferPool&& o) noexcept;
  BufferPool(const BufferPool&) = delete;
  BufferPool& operator=(const BufferPool&) = delete;
  ~BufferPool();
  SharedBuffer acquire();
  std::size_t buffers_allocated() const;
  std::size_t floats_per_buffer() const { return size_; }

private:
  std::size_t size_;
  SharedBuffer::Storage* storage_; // one of its owners
};

struct SharedBuffer::Slot {
  Vec data;
  int refs = 0;
  std::uint32_t id = 0;       // index in Storage::slots
  Storage* storage = nullptr; // the storage that owns it
};

struct SharedBuffer::Storage {
  // A deque: slots never move once made, and lie next to each other (a handle's count is
  // read at every copy: scattered one-slot allocations cost a cache miss each).
  std::deque<Slot> slots;
  std::vector<Slot*> free;
  // Its owners: the pool while it lives, and each slot in use. The last to let go deletes
  // it (engine thread only, as the slots' counts).
  std::size_t owners = 1;
  static void release(Storage* s) {
    if (--s->owners == 0)
      delete s;
  }
};

inline SharedBuffer::SharedBuffer(const SharedBuffer& o) : slot_(o.slot_) {
  if (slot_)
    ++slot_->refs;
}

inline SharedBuffer::~SharedBuffer() {
  if (slot_ && --slot_->refs == 0)
    recycle();
}

} // namespace dtsim
