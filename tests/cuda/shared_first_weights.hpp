// SPDX-License-Identifier: MIT
// A host executor that gets one stride wrong, for the batched passes' tests that must be
// able to fail: every node reads node 0's first-layer weights (a stride of 0 for A, as a
// wrong strideA handed to cuBLAS would).
#pragma once

#include "cuda/host_mlp_ops.hpp"

#include <utility>

namespace dtsim::test {

struct SharedFirstWeights : cuda::HostMlpOps {
  bool first = true;
  void gemm(cuda::StridedGemm g) {
    if (std::exchange(first, false))
      g.stride_a = 0;
    cuda::HostMlpOps::gemm(g);
  }
};

} // namespace dtsim::test
