// SPDX-License-Identifier: MIT
// CUDA error checks, owned device and pinned host arrays, the stream and cuBLAS handle, and
// the element-kernel launcher shared by the device passes.
#pragma once

#include <algorithm>
#include <cublas_v2.h>
#include <cuda_runtime.h>
#include <stdexcept>
#include <string>

namespace dtsim::cuda {
namespace {

void check(cudaError_t e, const char* what) {
  if (e != cudaSuccess) {
    cudaGetLastError(); // clear a non-sticky error, so that a later check does not report it
    throw std::runtime_error(std::string("CUDA: ") + what + ": " + cudaGetErrorString(e));
  }
}

void check(cublasStatus_t s, const char* what) {
  if (s != CUBLAS_STATUS_SUCCESS)
    throw std::runtime_error(std::string("cuBLAS: ") + what + ": " + cublasGetStatusString(s));
}

constexpr int kThreads = 256;
constexpr std::size_t kMaxGridY = 65535; // CUDA's limit on gridDim.y: nodes per launch

unsigned blocks_for(std::size_t items) {
  return static_cast<unsigned>((items + kThreads - 1) / kThreads);
}

// f(b, i) for node b < count and every element i < per_node: the one kernel shape of the
// element steps (the math is in the *_batch_math.hpp headers, which the host executors run).
// Nodes are the grid's y dimension, in launches of at most kMaxGridY of them.
template <class F> __global__ void each_element_kernel(F f, std::size_t per_node, int first_node) {
  const std::size_t i = static_cast<std::size_t>(blockIdx.x) * blockDim.x + threadIdx.x;
  if (i < per_node)
    f(first_node + static_cast<int>(blockIdx.y), i);
}

template <class F> void each_element(cudaStream_t stream, int count, std::size_t per_node, F f) {
  if (per_node == 0)
    return;
  constexpr int kSlice = static_cast<int>(kMaxGridY);
  for (int first = 0; first < count; first += kSlice)
    each_element_kernel<<<dim3(blocks_for(per_node),
                               static_cast<unsigned>(std::min(kSlice, count - first))),
                          kThreads, 0, stream>>>(f, per_node, first);
}

// f(b, e0, kThreads) for node b < count and tiles of J * kThreads elements of per_node:
// thread t of a tile's block takes e0 = the tile's start + t and the J - 1 elements after
// it at a stride of kThreads (coalesced, and the node's plan read once for J elements; the
// resident steps' shape, resident_math.hpp).
template <int J, class F>
__global__ void each_tile_kernel(F f, std::size_t per_node, int first_node) {
  const std::size_t e0 = static_cast<std::size_t>(blockIdx.x) * (J * kThreads) + threadIdx.x;
  if (e0 < per_node)
    f(first_node + static_cast<int>(blockIdx.y), e0, static_cast<std::size_t>(kThreads));
}

template <int J, class F>
void each_tile(cudaStream_t stream, int count, std::size_t per_node, F f) {
  if (per_node == 0)
    return;
  constexpr int kSlice = static_cast<int>(kMaxGridY);
  const auto tiles = static_cast<unsigned>((per_node + J * kThreads - 1) / (J * kThreads));
  for (int first = 0; first < count; first += kSlice)
    each_tile_kernel<J><<<dim3(tiles, static_cast<unsigned>(std::min(kSlice, count - first))),
                          kThreads, 0, stream>>>(f, per_node, first);
}

// Device memory (cudaMalloc) or pinned host memory (cudaMallocHost, for asynchronous
// copies), grown by resize() and freed with its owner.
enum class Memory { device, pinned_host };

template <class T, Memory Where> struct CudaArray {
  T* data = nullptr;
  std::size_t size = 0;
  CudaArray() = default;
  CudaArray(const CudaArray&) = delete;
  CudaArray& operator=(const CudaArray&) = delete;
  CudaArray(CudaArray&& other) noexcept : data(other.data), size(other.size) {
    other.data = nullptr;
    other.size = 0;
  }
  CudaArray& operator=(CudaArray&&) = delete;
  ~CudaArray() { release(); }
  void resize(std::size_t n, const char* what) {
    if (n <= size)
      return;
    release();
    void** p = reinterpret_cast<void**>(&data);
    check(Where == Memory::device ? cudaMalloc(p, n * sizeof(T)) : cudaMallocHost(p, n * sizeof(T)),
          what);
    size = n;
  }
  void release() {
    if (data != nullptr)
      Where == Memory::device ? cudaFree(data) : cudaFreeHost(data);
    data = nullptr;
    size = 0;
  }
};

template <class T> using DeviceArray = CudaArray<T, Memory::device>;
template <class T> using PinnedArray = CudaArray<T, Memory::pinned_host>;

// A non-blocking stream and a cuBLAS handle on it, destroyed with their owner (also when its
// constructor throws after creating them).
struct CudaStream {
  cudaStream_t stream = nullptr;
  CudaStream() {
    check(cudaStreamCreateWithFlags(&stream, cudaStreamNonBlocking), "cudaStreamCreate");
  }
  CudaStream(const CudaStream&) = delete;
  CudaStream& operator=(const CudaStream&) = delete;
  ~CudaStream() { cudaStreamDestroy(stream); }
};

// A timing event, destroyed with its owner.
struct CudaEvent {
  cudaEvent_t event = nullptr;
  CudaEvent() { check(cudaEventCreate(&event), "cudaEventCreate"); }
  CudaEvent(const CudaEvent&) = delete;
  CudaEvent& operator=(const CudaEvent&) = delete;
  ~CudaEvent() { cudaEventDestroy(event); }
};

// Seconds between two recorded events that have completed.
double seconds_between(const CudaEvent& from, const CudaEvent& to) {
  float ms = 0.0f;
  check(cudaEventElapsedTime(&ms, from.event, to.event), "cudaEventElapsedTime");
  return static_cast<double>(ms) / 1000.0;
}

struct BlasHandle {
  cublasHandle_t blas = nullptr;
  explicit BlasHandle(cudaStream_t stream) {
    check(cublasCreate(&blas), "cublasCreate");
    try {
      check(cublasSetStream(blas, stream), "cublasSetStream");
      // Full FP32 (no TF32 tensor cores): the CPU backend is the reference these gradients
      // are compared with.
      check(cublasSetMathMode(blas, CUBLAS_PEDANTIC_MATH), "cublasSetMathMode");
    } catch (...) {
      cublasDestroy(blas);
      throw;
    }
  }
  BlasHandle(const BlasHandle&) = delete;
  BlasHandle& operator=(const BlasHandle&) = delete;
  ~BlasHandle() { cublasDestroy(blas); }
};

} // namespace
} // namespace dtsim::cuda
