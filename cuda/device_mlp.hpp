// SPDX-License-Identifier: MIT
// Softmax / MLP gradients of many nodes at once on a CUDA device (cuBLAS strided-batched).
#pragma once

#include "sim/engine/batched_gradients.hpp"

#include <cstdint>
#include <memory>
#include <span>
#include <string>
#include <vector>

namespace dtsim::cuda {

// The models::Mlp network (ReLU hidden layers, softmax cross-entropy head, the same flat
// parameter layout: per layer W out x in column-major, then b) for a batch of nodes. The
// training set is copied to the device once; a batch then sends each node's parameters and
// minibatch row indices, gathers the minibatches on the device, runs every layer as one
// strided-batched GEMM over all nodes of the batch (nodes' models are the batch dimension),
// and brings the gradients and losses back. Reductions (bias gradients, the mean loss) are
// sequential per row or per node, with no atomics, so a device and build give the same bits
// every time. Plain C++ interface: the CUDA types stay in device_mlp.cu.
class DeviceMlp {
public:
  // widths: inputs, hidden widths..., classes. train_features: inputs x examples,
  // column-major. A batch of more nodes than fit on the device (or than
  // max_nodes_per_batch, which tests lower) runs in chunks. Throws std::runtime_error
  // naming the CUDA call that failed.
  DeviceMlp(std::vector<int> widths, std::span<const float> train_features,
            std::span<const std::int32_t> train_labels, int batch_size,
            int max_nodes_per_batch = 65535);
  ~DeviceMlp();
  DeviceMlp(const DeviceMlp&) = delete;
  DeviceMlp& operator=(const DeviceMlp&) = delete;

  void compute(std::span<GradientJob> jobs);
  TransferStats transfers() const;
  std::string device_name() const;

private:
  struct Impl;
  std::unique_ptr<Impl> impl_;
};

// Empty when a CUDA device can be used; else why not, in one line ("no CUDA device found
// (...)").
std::string device_unavailable_reason();

} // namespace dtsim::cuda
