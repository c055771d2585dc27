// SPDX-License-Identifier: MIT
// A plan array of the resident store: filled on the host, in pinned memory, and copied to
// the device on the batches' stream, its bytes counted as the bus's.
#pragma once

#include "cuda/device_memory.cuh"
#include "sim/engine/batched_gradients.hpp"

#include <algorithm>
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

} // namespace
} // namespace dtsim::cuda
