// SPDX-License-Identifier: MIT
// The CUDA backend's entry points in a build without it (DTSIM_CUDA off or no toolkit).
#include "cuda/cuda_backend.hpp"

#include <stdexcept>

namespace dtsim::cuda {

bool built_with_cuda() {
  return false;
}

std::string unavailable_reason() {
  return "this dtsim was built without CUDA (configure on a machine with the CUDA toolkit and "
         "cuBLAS, or with -DDTSIM_CUDA=ON to require it)";
}

std::unique_ptr<BatchedGradients> make_gradients(const Model&, const Dataset&, int, ResidentSize) {
  throw std::runtime_error(unavailable_reason());
}

} // namespace dtsim::cuda
