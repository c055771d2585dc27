// SPDX-License-Identifier: MIT
// Pooled, reference-counted float buffers: message payloads without allocation per message.
#pragma once

#include "sim/core/flat_vector.hpp"

#include <cstdint>
#include <memory>
#include <span>
#include <vector>

namespace dtsim {

class BufferPool;

// A handle to one pooled vector. Copies share the buffer; the last handle returns it to the
// pool. Reference counts change on the engine thread only; tasks may read a buffer that a
// live handle keeps alive. Writable only through `data()` before it is shared. Handles keep
// the pool's storage alive, so an algorithm may outlive the simulator that made its buffers.
class SharedBuffer {
public:
  SharedBuffer() = default;
  SharedBuffer(const SharedBuffer& o);
  SharedBuffer(SharedBuffer&& o) noexcept;
  SharedBuffer& operator=(SharedBuffer o) noexcept;
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
  SharedBuffer(std::shared_ptr<Storage> storage, Slot* slot);
  std::shared_ptr<Storage> storage_;
  Slot* slot_ = nullptr;
};

// Owns every buffer; grows to the peak number alive at once, then never allocates again.
class BufferPool {
public:
  explicit BufferPool(std::size_t floats_per_buffer);
  SharedBuffer acquire();
  std::size_t buffers_allocated() const;
  std::size_t floats_per_buffer() const { return size_; }

private:
  std::size_t size_;
  std::shared_ptr<SharedBuffer::Storage> storage_;
};

struct SharedBuffer::Slot {
  Vec data;
  int refs = 0;
  std::uint32_t id = 0; // index in Storage::slots
};

struct SharedBuffer::Storage {
  std::vector<std::unique_ptr<Slot>> slots;
  std::vector<Slot*> free;
};

} // namespace dtsim
