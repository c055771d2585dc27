// SPDX-License-Identifier: MIT
// Gradients of many nodes' models at once on a CUDA device: the MLP/softmax network
// (cuBLAS strided-batched GEMMs), LeNet/CNN and ResNet (im2col + strided-batched GEMMs, own
// kernels).
#pragma once

#include "cuda/cnn_batch_math.hpp"
#include "cuda/resident_fit.hpp"
#include "cuda/resnet_batch_math.hpp"
#include "sim/engine/batched_gradients.hpp"

#include <cstdint>
#include <memory>
#include <span>
#include <string>
#include <vector>

namespace dtsim::cuda {

// A network's batched pass on the device. The training set is copied to the device once; a
// batch then sends each node's parameters and minibatch row indices, gathers the
// minibatches on the device, runs every layer as strided-batched GEMMs over all nodes of the
// batch (the nodes' models are the batch dimension) and element kernels, and brings the
// gradients and losses back. Reductions (bias and normalisation gradients, pooling, the
// mean loss) are sequential per value, with no atomics, so a device and build give the same
// bits every time. Plain C++ interface: the CUDA types stay in the .cu files.
class DeviceGradients {
public:
  virtual ~DeviceGradients() = default;
  // Jobs may have different batch sizes (up to the batch_size given at construction); each
  // size runs as its own group, in chunks of what fits on the device.
  virtual void compute(std::span<GradientJob> jobs) = 0;
  virtual TransferStats transfers() const = 0;
  virtual std::string device_name() const = 0;
  // Made with resident nodes: the node models, momenta and messages this device keeps
  // for an algorithm that attaches (BatchedGradients::resident, finish); else null.
  virtual ResidentVectors* resident() { return nullptr; }
  virtual void finish(std::span<GradientJob> /*jobs*/) {}
  // BatchedGradients::collect: a resident batch's losses, left in flight by compute().
  virtual void collect(std::span<GradientJob> /*jobs*/) {}
  // Kernels turned on that change results in their last bits (for the trace's description),
  // e.g. "first layer mixed in its forward pass"; empty where none.
  virtual std::string kernel_notes() const { return {}; }
  // BatchedGradients::evaluate_resident_models (the MLP/softmax, LeNet/CNN and ResNet
  // networks).
  virtual bool evaluate_resident(std::span<const float> /*features*/,
                                 std::span<const std::int32_t> /*labels*/,
                                 std::span<EvalResult> /*out*/) {
    return false;
  }
  // BatchedGradients::evaluate_models (the same networks).
  virtual bool evaluate_models(std::span<const std::span<const float>> /*models*/,
                               std::span<const float> /*features*/,
                               std::span<const std::int32_t> /*labels*/,
                               std::span<EvalResult> /*out*/) {
    return false;
  }
};

// train_features: features x examples, column-major. resident.nodes > 0: also keep that
// many nodes' vectors (resident()), refused before anything is made where about
// resident.vectors_per_node vectors of P floats per node do not fit. A batch of more nodes than fit
// on the device (or than max_nodes_per_batch, which tests lower) runs in chunks. Throw
// std::runtime_error naming the CUDA call that failed.
//
// The device's kernel choices, each at its default unless the environment switches it
// (cuda_backend.cpp): most are what a resident MLP's synchronous batch (one chunk of every
// job, on the nodes' own rows) fuses with its layers, which the tests compare with the unfused
// kernels; the store's (plain_mixing_kernel, vector_programs) and preload_kernels serve every
// network.
struct KernelChoices {
  // Each forward product's bias and ReLU in the product's epilogue (cuBLASLt,
  // bias_epilogue_gemm.cuh) rather than an element kernel after it; the backend adds them in
  // a kernel of their own, as before, where the environment has DTSIM_CUDA_GEMM_EPILOGUE=0.
  bool bias_epilogue = true;
  // The weight gradients of the first step_layers layers (1 or 2, as many as the network
  // has) into the local steps (fused_layer_step.hpp). The backend takes 1 where the
  // environment has DTSIM_CUDA_FUSED_LAYERS=1: the second layer's fusion against the first
  // alone on one binary (its pass 0.14 ms shorter per 1,024-node round on an H100).
  bool steps = true;
  int step_layers = 2;
  // Each fused block's tiles of the model and momentum copied into shared memory while its
  // gradient sums run (fused_layer_step_prefetch_kernel; on an H100 the first layer's kernel
  // 1.74 -> 1.40 ms per 1,024-node round); the backend loads them after the sums, as before,
  // where the environment has DTSIM_CUDA_FUSED_PREFETCH=0, for a measurement of the two.
  bool prefetch = true;
  // With prefetch, the sums' inputs of a minibatch of up to 32 examples copied the same way,
  // before the tiles, so that the sums do not wait behind them (1.45 -> 1.37 ms); the
  // backend copies them after the tiles, as before, where the environment has
  // DTSIM_CUDA_FUSED_SUMS_FIRST=0.
  bool sums_first = true;
  // A plain gossip mixing (no refresh, subtraction or CHOCO-SGD) in a kernel of its own
  // (plain_mix_tile), with fewer registers than the kernel of every mixing (on an H100
  // 798 -> 730 us per 1,024-node round); the backend runs
  // it in that kernel where the environment has DTSIM_CUDA_PLAIN_MIX=0, for a measurement of
  // the one against the other on one binary. Every model's resident store takes it.
  bool plain_mixing_kernel = true;
  // The engine thread's element-wise steps (a pairwise method's or a parameter server's
  // apply, SwarmSGD's decodings and own views) queued and launched as programs of up to 32
  // steps (vector_program.hpp), one kernel per run of steps between other work; the backend
  // launches every step on its own where the environment has DTSIM_CUDA_VECTOR_PROGRAMS=0,
  // for a measurement of the two on one binary (the same bits). Every model's store takes it.
  bool vector_programs = true;
  // A plain gossip mixing into the forward product, for minibatches of up to 32
  // (mixed_first_layer.hpp). Off by default until a GPU has measured it: the backend turns
  // it on where the environment has DTSIM_CUDA_MIXED_FORWARD=1.
  bool mixing = false;
  // ... for a batch that gives it at least this many blocks per SM (mixed_forward_fills); the
  // device tests take 0, so that a few nodes take it.
  int mixing_min_blocks_per_sm = 2;
  // At set-up, before the run's clock, what a run's first round would do: every kernel of
  // the network's module loaded (kernel_preload.cuh; the runtime's lazy loading leaves each
  // to its first launch) and, on a resident backend, a batch of every kept node's buffers
  // made and one pass run through them (cuBLAS's kernels, cuBLASLt's plans). On an H100 the
  // goal row's 1.6 M node-steps ran 2.4% faster [1.6, 3.2] (eighth lease): its first round
  // began 0.03 s after the clock instead of 0.15 s. The backend leaves it all to the first
  // round, as before, where the environment has DTSIM_CUDA_PRELOAD=0.
  bool preload_kernels = true;
};

// The models::Mlp network (ReLU hidden layers, softmax cross-entropy head, its flat
// parameter layout); widths: inputs, hidden widths..., classes.
std::unique_ptr<DeviceGradients> make_device_mlp(std::vector<int> widths,
                                                 std::span<const float> train_features,
                                                 std::span<const std::int32_t> train_labels,
                                                 int batch_size, int max_nodes_per_batch = 65535,
                                                 ResidentSize resident = {},
                                                 KernelChoices choices = {});
// The models::Cnn network, LeNet among them (cnn_batch_shape.hpp gives its shape).
std::unique_ptr<DeviceGradients> make_device_cnn(CnnBatchShape shape,
                                                 std::span<const float> train_features,
                                                 std::span<const std::int32_t> train_labels,
                                                 int batch_size, int max_nodes_per_batch = 65535,
                                                 ResidentSize resident = {},
                                                 KernelChoices choices = {});
// The models::ResNet network (resnet_batch_shape.hpp gives its shape).
std::unique_ptr<DeviceGradients> make_device_resnet(ResNetBatchShape shape,
                                                    std::span<const float> train_features,
                                                    std::span<const std::int32_t> train_labels,
                                                    int batch_size, int max_nodes_per_batch = 65535,
                                                    ResidentSize resident = {},
                                                    KernelChoices choices = {});

// Empty when a CUDA device can be used; else why not, in one line ("no CUDA device found
// (...)").
std::string device_unavailable_reason();

} // namespace dtsim::cuda
