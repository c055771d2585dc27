// SPDX-License-Identifier: MIT
// A layer's forward product with its bias (and ReLU) added in the GEMM's epilogue
// (cuBLASLt's CUBLASLT_EPILOGUE_BIAS / RELU_BIAS, each node's bias at its own batch
// stride), where the MLP's pass otherwise runs the product, then an element kernel that reads
// and writes the whole activation again (add_bias_element): one kernel and one round trip of
// the activations fewer per layer. The same fp32 sums, ordered as the library's kernel orders
// them, then the same bias and ReLU; another kernel than cublasSgemmStridedBatched's may
// order the sums otherwise, so the bits may differ from the separate steps', and repeat.
#pragma once

#include "cuda/device_memory.cuh"
#include "cuda/mlp_batch_math.hpp"
#include "cuda/operand_alignment.hpp"

#include <array>
#include <compare>
#include <cstdint>
#include <cublasLt.h>
#include <map>

namespace dtsim::cuda {
namespace {

// One per MLP network, used where its batch runner queues the pass: on the runner's one
// thread, as the runner's stream is (the plans' bias pointer is set per call).
class BiasEpilogueGemms {
public:
  BiasEpilogueGemms() {
    check(cublasLtCreate(&handle_), "cublasLtCreate");
    workspace_.resize(kWorkspaceBytes, "cudaMalloc (cuBLASLt workspace)");
  }
  ~BiasEpilogueGemms() {
    for (auto& [key, plan] : plans_)
      plan.release();
    cublasLtDestroy(handle_);
  }
  BiasEpilogueGemms(const BiasEpilogueGemms&) = delete;
  BiasEpilogueGemms& operator=(const BiasEpilogueGemms&) = delete;

  // D = W x + bias (ReLU'd where relu) for g's nodes, node b's bias at bias + b *
  // bias_stride, on stream. False (nothing queued) where the library has no kernel for this
  // shape and these alignments: the caller then runs the product and the bias apart.
  bool run(cudaStream_t stream, const StridedGemm& g, const float* bias, long long bias_stride,
           bool relu) {
    if (g.trans_a || g.trans_b || g.stride_a <= 0 || g.stride_b <= 0 || g.stride_c <= 0)
      return false; // the forward products only, each node's operands its own
    // The weakest alignment any node's operand has: what the library's kernel must accept.
    const Key key{{g.m, g.n, g.k, g.lda, g.ldb, g.ldc, g.stride_a, g.stride_b, g.stride_c, g.count,
                   bias_stride, relu ? 1 : 0},
                  weakest_alignment(g.a, g.stride_a),
                  weakest_alignment(g.b, g.stride_b),
                  weakest_alignment(g.c, g.stride_c),
                  weakest_alignment(bias, bias_stride)};
    auto found = plans_.find(key);
    if (found == plans_.end()) { // made in place: a throw leaves it to the destructor
      found = plans_.emplace(key, Plan{}).first;
      make_plan(found->second, key, g, bias, bias_stride);
    }
    Plan& plan = found->second;
    if (!plan.usable)
      return false;
    check(cublasLtMatmulDescSetAttribute(plan.op, CUBLASLT_MATMUL_DESC_BIAS_POINTER, &bias,
                                         sizeof(bias)),
          "cublasLtMatmulDescSetAttribute (bias)");
    const float one = 1.0f, zero = 0.0f;
    check(cublasLtMatmul(handle_, plan.op, &one, g.a, plan.a, g.b, plan.b, &zero, g.c, plan.c, g.c,
                         plan.c, &plan.algo, workspace_.data, kWorkspaceBytes, stream),
          "cublasLtMatmul (bias epilogue)");
    return true;
  }

private:
  static constexpr std::size_t kWorkspaceBytes = std::size_t{32} << 20;
  // A product's shape and the weakest alignments of its operands: one plan each.
  struct Key {
    // m, n, k, lda, ldb, ldc, the three strides, count, the bias stride, relu.
    std::array<long long, 12> shape;
    std::size_t align_a, align_b, align_c, align_bias;
    auto operator<=>(const Key&) const = default;
  };

  struct Plan {
    bool usable = false;
    cublasLtMatmulDesc_t op = nullptr;
    cublasLtMatrixLayout_t a = nullptr, b = nullptr, c = nullptr;
    cublasLtMatmulAlgo_t algo{};
    void release() {
      if (a)
        cublasLtMatrixLayoutDestroy(a);
      if (b)
        cublasLtMatrixLayoutDestroy(b);
      if (c)
        cublasLtMatrixLayoutDestroy(c);
      if (op)
        cublasLtMatmulDescDestroy(op);
    }
  };

  static cublasLtMatrixLayout_t layout(std::uint64_t rows, std::uint64_t cols, long long ld,
                                       int count, long long stride) {
    cublasLtMatrixLayout_t l = nullptr;
    check(cublasLtMatrixLayoutCreate(&l, CUDA_R_32F, rows, cols, ld), "cublasLtMatrixLayoutCreate");
    const std::int32_t batch = count;
    const std::int64_t offset = stride;
    check(cublasLtMatrixLayoutSetAttribute(l, CUBLASLT_MATRIX_LAYOUT_BATCH_COUNT, &batch,
                                           sizeof(batch)),
          "cublasLtMatrixLayoutSetAttribute (batch count)");
    check(cublasLtMatrixLayoutSetAttribute(l, CUBLASLT_MATRIX_LAYOUT_STRIDED_BATCH_OFFSET, &offset,
                                           sizeof(offset)),
          "cublasLtMatrixLayoutSetAttribute (batch stride)");
    return l;
  }

  void make_plan(Plan& plan, const Key& key, const StridedGemm& g, const float* bias,
                 long long bias_stride) {
    check(cublasLtMatmulDescCreate(&plan.op, CUBLAS_COMPUTE_32F, CUDA_R_32F),
          "cublasLtMatmulDescCreate");
    const bool relu = key.shape[11] != 0;
    const std::uint32_t epilogue = relu ? CUBLASLT_EPILOGUE_RELU_BIAS : CUBLASLT_EPILOGUE_BIAS;
    const std::int64_t stride = bias_stride;
    check(cublasLtMatmulDescSetAttribute(plan.op, CUBLASLT_MATMUL_DESC_EPILOGUE, &epilogue,
                                         sizeof(epilogue)),
          "cublasLtMatmulDescSetAttribute (epilogue)");
    check(cublasLtMatmulDescSetAttribute(plan.op, CUBLASLT_MATMUL_DESC_BIAS_BATCH_STRIDE, &stride,
                                         sizeof(stride)),
          "cublasLtMatmulDescSetAttribute (bias stride)");
    // The heuristic reads the bias pointer's alignment: the weaker of the first two nodes'
    // (the weakest of all, as weakest_alignment reasons).
    const float* weaker =
        g.count > 1 && weakest_alignment(bias, 0) > key.align_bias ? bias + bias_stride : bias;
    check(cublasLtMatmulDescSetAttribute(plan.op, CUBLASLT_MATMUL_DESC_BIAS_POINTER, &weaker,
                                         sizeof(weaker)),
          "cublasLtMatmulDescSetAttribute (bias)");
    plan.a = layout(g.m, g.k, g.lda, g.count, g.stride_a);
    plan.b = layout(g.k, g.n, g.ldb, g.count, g.stride_b);
    plan.c = layout(g.m, g.n, g.ldc, g.count, g.stride_c);

    cublasLtMatmulPreference_t preference = nullptr;
    check(cublasLtMatmulPreferenceCreate(&preference), "cublasLtMatmulPreferenceCreate");
    const std::uint64_t workspace = kWorkspaceBytes;
    const auto align_a = static_cast<std::uint32_t>(key.align_a),
               align_b = static_cast<std::uint32_t>(key.align_b),
               align_c = static_cast<std::uint32_t>(key.align_c);
    // Every preference must hold (a kernel that assumes a stronger alignment than some
    // node's operand has would read it wrongly): a preference not set is no plan.
    const bool set =
        cublasLtMatmulPreferenceSetAttribute(preference, CUBLASLT_MATMUL_PREF_MAX_WORKSPACE_BYTES,
                                             &workspace,
                                             sizeof(workspace)) == CUBLAS_STATUS_SUCCESS &&
        cublasLtMatmulPreferenceSetAttribute(preference, CUBLASLT_MATMUL_PREF_MIN_ALIGNMENT_A_BYTES,
                                             &align_a, sizeof(align_a)) == CUBLAS_STATUS_SUCCESS &&
        cublasLtMatmulPreferenceSetAttribute(preference, CUBLASLT_MATMUL_PREF_MIN_ALIGNMENT_B_BYTES,
                                             &align_b, sizeof(align_b)) == CUBLAS_STATUS_SUCCESS &&
        cublasLtMatmulPreferenceSetAttribute(preference, CUBLASLT_MATMUL_PREF_MIN_ALIGNMENT_C_BYTES,
                                             &align_c, sizeof(align_c)) == CUBLAS_STATUS_SUCCESS &&
        cublasLtMatmulPreferenceSetAttribute(preference, CUBLASLT_MATMUL_PREF_MIN_ALIGNMENT_D_BYTES,
                                             &align_c, sizeof(align_c)) == CUBLAS_STATUS_SUCCESS;
    cublasLtMatmulHeuristicResult_t result{};
    int found = 0;
    const cublasStatus_t s =
        set ? cublasLtMatmulAlgoGetHeuristic(handle_, plan.op, plan.a, plan.b, plan.c, plan.c,
                                             preference, 1, &result, &found)
            : CUBLAS_STATUS_NOT_SUPPORTED;
    cublasLtMatmulPreferenceDestroy(preference);
    plan.usable = s == CUBLAS_STATUS_SUCCESS && found > 0 && result.state == CUBLAS_STATUS_SUCCESS;
    if (plan.usable)
      plan.algo = result.algo;
  }

  cublasLtHandle_t handle_ = nullptr;
  DeviceArray<unsigned char> workspace_;
  std::map<Key, Plan> plans_;
};

} // namespace
} // namespace dtsim::cuda
