// SPDX-License-Identifier: MIT
// A plan array of the resident store, or several in one buffer (StagedArrays): filled on the
// host, in pinned memory, and copied to the device on the batches' stream, the bytes counted
// as the bus's.
#pragma once

#include "cuda/device_memory.cuh"
#include "cuda/plan_layout.hpp"
#include "sim/engine/batched_gradients.hpp"

#include <algorithm>
#include <cstddef>
#include <cstdint>

namespace dtsim::cuda {
namespace {

template <class T> struct StagedPlan {
  PinnedArray<T> host;
  DeviceArray<T> device;
  void reserve(std::size_t n) {
    host.resize(std::max<std::size_t>(n, 1), "cudaMallocHost (resident plans)");
    device.resize(std::max<std::size_t>(n, 1), "cudaMalloc (resident plans)");
  }
  void upload(cudaStream_t s, std::size_t n, TransferStats& bus) {
    if (n == 0)
      return;
    check(cudaMemcpyAsync(device.data, host.data, n * sizeof(T), cudaMemcpyHostToDevice, s),
          "cudaMemcpyAsync (resident plans)");
    bus.host_to_device_bytes += static_cast<std::int64_t>(n * sizeof(T));
  }
};

// A batch's plan arrays at a PlanLayout's offsets in one pinned buffer and one device
// buffer, so that they go up in one copy.
struct StagedArrays {
  StagedPlan<std::byte> plan; // the arrays' bytes
  std::size_t bytes = 0;      // the layout's: what upload() copies
  void reserve(const PlanLayout& layout) {
    bytes = layout.bytes();
    plan.reserve(bytes);
  }
  // The array at `offset` (PlanLayout::add's), on the host and on the device (both buffers
  // start on 256 bytes: the layout's alignment holds in them).
  template <class T> T* on_host(std::size_t offset) {
    return reinterpret_cast<T*>(plan.host.data + offset);
  }
  template <class T> T* on_device(std::size_t offset) {
    return reinterpret_cast<T*>(plan.device.data + offset);
  }
  void upload(cudaStream_t s, TransferStats& bus) { plan.upload(s, bytes, bus); }
};

} // namespace
} // namespace dtsim::cuda
