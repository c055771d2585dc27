// SPDX-License-Identifier: MIT
// Every kernel of one translation unit's module loaded at set-up, before a run's clock.
//
// The CUDA runtime loads a kernel at its first launch (lazy loading, its default since CUDA
// 12.2), so under it a run's first rounds also wait for each of its kernels to load, inside
// the run's wall time. This loads them where the device memory is allocated and the training
// set uploaded, through the driver's library calls: the module's CUlibrary from one of its
// kernels, its kernels enumerated, each loaded into the current context. They are reached by
// cudaGetDriverEntryPointByVersion, so that the binary links and starts without libcuda.
// cuBLAS's kernels are not among them: they load at a product's first call (the batch
// runner's warm-up pass makes those calls).
#pragma once

#include <cuda.h>
#include <cuda_runtime.h>
#include <string>
#include <vector>

namespace dtsim::cuda {
namespace {

struct KernelPreload {
  int kernels = 0;     // the module's kernels loaded now or found loaded
  std::string failure; // empty, or why the rest were left to load at their first launch
};

// The driver's function `name` as of CUDA `version` (e.g. 12050), or null.
template <class Function> Function driver_entry(const char* name, unsigned version) {
  void* function = nullptr;
  cudaDriverEntryPointQueryResult found{};
  if (cudaGetDriverEntryPointByVersion(name, &function, version, cudaEnableDefault, &found) !=
          cudaSuccess ||
      found != cudaDriverEntryPointSuccess) {
    cudaGetLastError(); // not sticky: later calls start clean
    return nullptr;
  }
  return reinterpret_cast<Function>(function);
}

// Loads every kernel of the module that holds `any_kernel` (a __global__ function's
// address, of the translation unit whose kernels are wanted). A failure leaves the kernels
// to the runtime's lazy loading and says why: it never stops a run.
KernelPreload preload_module_kernels(const void* any_kernel) {
  using GetLibrary = CUresult(CUDAAPI*)(CUlibrary*, CUkernel);
  using KernelCount = CUresult(CUDAAPI*)(unsigned*, CUlibrary);
  using Enumerate = CUresult(CUDAAPI*)(CUkernel*, unsigned, CUlibrary);
  using GetFunction = CUresult(CUDAAPI*)(CUfunction*, CUkernel);
  using Load = CUresult(CUDAAPI*)(CUfunction);
  const auto get_library = driver_entry<GetLibrary>("cuKernelGetLibrary", 12050);
  const auto kernel_count = driver_entry<KernelCount>("cuLibraryGetKernelCount", 12040);
  const auto enumerate = driver_entry<Enumerate>("cuLibraryEnumerateKernels", 12040);
  const auto get_function = driver_entry<GetFunction>("cuKernelGetFunction", 12000);
  const auto load = driver_entry<Load>("cuFuncLoad", 12040);
  KernelPreload out;
  if (!get_library || !kernel_count || !enumerate || !get_function || !load) {
    out.failure = "the driver lacks the library calls of CUDA 12.5";
    return out;
  }
  const auto failed = [&out](const char* call, int code) {
    out.failure = std::string(call) + " failed (" + std::to_string(code) + ")";
    return out;
  };
  cudaKernel_t kernel = nullptr;
  if (const cudaError_t e = cudaGetKernel(&kernel, any_kernel); e != cudaSuccess) {
    cudaGetLastError();
    return failed("cudaGetKernel", e);
  }
  CUlibrary library = nullptr;
  if (const CUresult r = get_library(&library, reinterpret_cast<CUkernel>(kernel)))
    return failed("cuKernelGetLibrary", r);
  unsigned count = 0;
  if (const CUresult r = kernel_count(&count, library))
    return failed("cuLibraryGetKernelCount", r);
  std::vector<CUkernel> kernels(count);
  if (const CUresult r = enumerate(kernels.data(), count, library))
    return failed("cuLibraryEnumerateKernels", r);
  for (CUkernel k : kernels) {
    CUfunction function = nullptr;
    if (const CUresult r = get_function(&function, k))
      return failed("cuKernelGetFunction", r);
    if (const CUresult r = load(function))
      return failed("cuFuncLoad", r);
    ++out.kernels;
  }
  return out;
}

} // namespace
} // namespace dtsim::cuda
