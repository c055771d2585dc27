// SPDX-License-Identifier: MIT
// DeviceMlp: the batched forward/backward kernels and cuBLAS calls.
#include "cuda/device_mlp.hpp"
#include "cuda/mlp_batch_math.hpp"

#include <algorithm>
#include <cublas_v2.h>
#include <cuda_runtime.h>
#include <stdexcept>
#include <string>

namespace dtsim::cuda {
namespace {

void check(cudaError_t e, const char* what) {
  if (e != cudaSuccess)
    throw std::runtime_error(std::string("CUDA: ") + what + ": " + cudaGetErrorString(e));
}

void check(cublasStatus_t s, const char* what) {
  if (s != CUBLAS_STATUS_SUCCESS)
    throw std::runtime_error(std::string("cuBLAS: ") + what + ": " + cublasGetStatusString(s));
}

constexpr int kThreads = 256;
constexpr std::size_t kMaxGridY = 65535; // CUDA's limit on gridDim.y

unsigned blocks_for(std::size_t items) {
  return static_cast<unsigned>((items + kThreads - 1) / kThreads);
}

// One thread per element (grid.y = node); the math is mlp_batch_math.hpp's, which the host
// reference executor runs too.
__global__ void gather_kernel(const float* train, int features, const std::uint32_t* idx, int n,
                              float* x) {
  const std::size_t e = static_cast<std::size_t>(blockIdx.x) * blockDim.x + threadIdx.x;
  if (e < static_cast<std::size_t>(features) * n)
    gather_element(train, features, idx, n, x, static_cast<int>(blockIdx.y), e);
}

__global__ void add_bias_kernel(float* z, int out, int n, const float* params,
                                std::size_t num_params, std::size_t bias_offset, bool relu) {
  const std::size_t e = static_cast<std::size_t>(blockIdx.x) * blockDim.x + threadIdx.x;
  if (e < static_cast<std::size_t>(out) * n)
    add_bias_element(z, out, n, params, num_params, bias_offset, relu, static_cast<int>(blockIdx.y),
                     e);
}

__global__ void softmax_xent_kernel(const float* logits, int classes, int n,
                                    const std::int32_t* labels, const std::uint32_t* idx,
                                    float* dlogits, double* column_loss) {
  const int k = static_cast<int>(blockIdx.x * blockDim.x + threadIdx.x);
  if (k < n)
    softmax_xent_column(logits, classes, n, labels, idx, dlogits, column_loss,
                        static_cast<int>(blockIdx.y), k);
}

__global__ void mean_loss_kernel(const double* column_loss, int n, int nodes, double* loss) {
  const int b = static_cast<int>(blockIdx.x * blockDim.x + threadIdx.x);
  if (b < nodes)
    mean_loss_node(column_loss, n, loss, b);
}

__global__ void bias_gradient_kernel(const float* dz, int out, int n, float* grads,
                                     std::size_t num_params, std::size_t bias_offset) {
  const int j = static_cast<int>(blockIdx.x * blockDim.x + threadIdx.x);
  if (j < out)
    bias_gradient_row(dz, out, n, grads, num_params, bias_offset, static_cast<int>(blockIdx.y), j);
}

__global__ void relu_backward_kernel(const float* a, float* d, std::size_t count) {
  const std::size_t e = static_cast<std::size_t>(blockIdx.x) * blockDim.x + threadIdx.x;
  if (e < count)
    relu_backward_element(a, d, e);
}

// run_mlp_batch's executor on the device: one kernel launch per step, cuBLAS for the GEMMs,
// all on one stream.
struct DeviceOps {
  cublasHandle_t blas;
  cudaStream_t stream;

  void gemm(const StridedGemm& g) const {
    const float one = 1.0f, zero = 0.0f;
    check(cublasSgemmStridedBatched(blas, g.trans_a ? CUBLAS_OP_T : CUBLAS_OP_N,
                                    g.trans_b ? CUBLAS_OP_T : CUBLAS_OP_N, g.m, g.n, g.k, &one, g.a,
                                    g.lda, g.stride_a, g.b, g.ldb, g.stride_b, &zero, g.c, g.ldc,
                                    g.stride_c, g.count),
          "cublasSgemmStridedBatched");
  }
  void gather(const MlpBatchBuffers& buf, int features, int n, int count) const {
    const dim3 grid(blocks_for(static_cast<std::size_t>(features) * n), count);
    gather_kernel<<<grid, kThreads, 0, stream>>>(buf.train, features, buf.idx, n, buf.x);
  }
  void add_bias(float* z, int out, int n, const float* params, std::size_t num_params,
                std::size_t bias_offset, bool relu, int count) const {
    const dim3 grid(blocks_for(static_cast<std::size_t>(out) * n), count);
    add_bias_kernel<<<grid, kThreads, 0, stream>>>(z, out, n, params, num_params, bias_offset,
                                                   relu);
  }
  void softmax_xent(const float* logits, int classes, int n, const MlpBatchBuffers& buf,
                    float* dlogits, int count) const {
    const dim3 grid(blocks_for(static_cast<std::size_t>(n)), count);
    softmax_xent_kernel<<<grid, kThreads, 0, stream>>>(logits, classes, n, buf.labels, buf.idx,
                                                       dlogits, buf.column_loss);
  }
  void mean_loss(const MlpBatchBuffers& buf, int n, int count) const {
    mean_loss_kernel<<<blocks_for(static_cast<std::size_t>(count)), kThreads, 0, stream>>>(
        buf.column_loss, n, count, buf.loss);
  }
  void bias_gradient(const float* dz, int out, int n, float* grads, std::size_t num_params,
                     std::size_t bias_offset, int count) const {
    const dim3 grid(blocks_for(static_cast<std::size_t>(out)), count);
    bias_gradient_kernel<<<grid, kThreads, 0, stream>>>(dz, out, n, grads, num_params, bias_offset);
  }
  void relu_backward(const float* a, float* d, std::size_t total) const {
    relu_backward_kernel<<<blocks_for(total), kThreads, 0, stream>>>(a, d, total);
  }
};

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

} // namespace

struct DeviceMlp::Impl {
  Impl() = default;
  Impl(const Impl&) = delete;
  Impl& operator=(const Impl&) = delete;
  ~Impl();

  MlpBatchShape shape;
  int batch_size = 0;
  int max_nodes = 1; // per device batch, from the device's free memory
  cudaStream_t stream = nullptr;
  cublasHandle_t blas = nullptr;
  std::string name;
  DeviceArray<float> train;
  DeviceArray<std::int32_t> labels;
  // Sized for `capacity` nodes of one device batch.
  std::size_t capacity = 0;
  DeviceArray<float> params, grads, x, delta[2];
  std::vector<DeviceArray<float>> act;
  std::vector<float*> act_pointers;
  DeviceArray<std::uint32_t> idx;
  DeviceArray<double> column_loss, loss;
  PinnedArray<std::uint32_t> host_idx;
  PinnedArray<double> host_loss;
  std::vector<std::size_t> group; // jobs of one batch size
  TransferStats bus;

  std::size_t bytes_per_node() const {
    std::size_t floats = 2 * shape.num_params +
                         static_cast<std::size_t>(shape.features) * batch_size +
                         2 * static_cast<std::size_t>(shape.widest) * batch_size;
    for (const BatchLayer& l : shape.layers)
      floats += static_cast<std::size_t>(l.out) * batch_size;
    return floats * sizeof(float) + static_cast<std::size_t>(batch_size) * (4 + 8) + 8;
  }

  void reserve(std::size_t nodes) {
    if (nodes <= capacity)
      return;
    std::size_t c = std::max<std::size_t>(capacity, 1);
    while (c < nodes)
      c *= 2;
    c = std::min<std::size_t>(c, static_cast<std::size_t>(max_nodes));
    const auto n = static_cast<std::size_t>(batch_size);
    params.resize(c * shape.num_params, "cudaMalloc (node models)");
    grads.resize(c * shape.num_params, "cudaMalloc (gradients)");
    x.resize(c * shape.features * n, "cudaMalloc (minibatches)");
    for (std::size_t l = 0; l < shape.layers.size(); ++l) {
      act[l].resize(c * shape.layers[l].out * n, "cudaMalloc (activations)");
      act_pointers[l] = act[l].data;
    }
    for (auto& d : delta)
      d.resize(c * shape.widest * n, "cudaMalloc (deltas)");
    idx.resize(c * n, "cudaMalloc (indices)");
    column_loss.resize(c * n, "cudaMalloc (losses)");
    loss.resize(c, "cudaMalloc (losses)");
    host_idx.resize(c * n, "cudaMallocHost (indices)");
    host_loss.resize(c, "cudaMallocHost (losses)");
    capacity = c;
  }

  // Jobs job_ids[0..count) all have batch size n; count <= capacity.
  void run(std::span<GradientJob> jobs, const std::size_t* job_ids, int count, int n) {
    const std::size_t P = shape.num_params;
    const auto nodes = static_cast<std::size_t>(count);
    for (std::size_t b = 0; b < nodes; ++b) {
      const GradientJob& job = jobs[job_ids[b]];
      check(cudaMemcpyAsync(params.data + b * P, job.params.data(), P * sizeof(float),
                            cudaMemcpyHostToDevice, stream),
            "cudaMemcpyAsync (node model)");
      std::copy(job.indices.begin(), job.indices.end(), host_idx.data + b * n);
    }
    check(cudaMemcpyAsync(idx.data, host_idx.data, nodes * n * sizeof(std::uint32_t),
                          cudaMemcpyHostToDevice, stream),
          "cudaMemcpyAsync (indices)");
    bus.host_to_device_bytes +=
        static_cast<std::int64_t>(nodes * (P * sizeof(float) + n * sizeof(std::uint32_t)));

    MlpBatchBuffers buf;
    buf.train = train.data;
    buf.labels = labels.data;
    buf.params = params.data;
    buf.grads = grads.data;
    buf.idx = idx.data;
    buf.x = x.data;
    buf.act = act_pointers.data();
    buf.delta[0] = delta[0].data;
    buf.delta[1] = delta[1].data;
    buf.column_loss = column_loss.data;
    buf.loss = loss.data;
    DeviceOps ops{blas, stream};
    run_mlp_batch(ops, shape, buf, count, n);
    check(cudaGetLastError(), "kernel launch");

    for (std::size_t b = 0; b < nodes; ++b) {
      GradientJob& job = jobs[job_ids[b]];
      check(cudaMemcpyAsync(job.grad.data(), grads.data + b * P, P * sizeof(float),
                            cudaMemcpyDeviceToHost, stream),
            "cudaMemcpyAsync (gradient)");
    }
    check(cudaMemcpyAsync(host_loss.data, loss.data, nodes * sizeof(double), cudaMemcpyDeviceToHost,
                          stream),
          "cudaMemcpyAsync (losses)");
    check(cudaStreamSynchronize(stream), "cudaStreamSynchronize");
    bus.device_to_host_bytes +=
        static_cast<std::int64_t>(nodes * (P * sizeof(float) + sizeof(double)));
    for (std::size_t b = 0; b < nodes; ++b)
      jobs[job_ids[b]].loss = host_loss.data[b];
  }
};

DeviceMlp::DeviceMlp(std::vector<int> widths, std::span<const float> train_features,
                     std::span<const std::int32_t> train_labels, int batch_size,
                     int max_nodes_per_batch)
    : impl_(std::make_unique<Impl>()) {
  Impl& m = *impl_;
  if (widths.size() < 2 || batch_size < 1 || max_nodes_per_batch < 1 || train_labels.empty() ||
      train_features.size() != static_cast<std::size_t>(widths.front()) * train_labels.size())
    throw std::invalid_argument("DeviceMlp: inconsistent widths, batch size or training set");
  m.shape = mlp_batch_shape(widths);
  m.batch_size = batch_size;
  m.act.resize(m.shape.layers.size());
  m.act_pointers.resize(m.shape.layers.size());
  const std::string why = device_unavailable_reason();
  if (!why.empty())
    throw std::runtime_error(why);
  int device = 0;
  check(cudaGetDevice(&device), "cudaGetDevice");
  cudaDeviceProp prop{};
  check(cudaGetDeviceProperties(&prop, device), "cudaGetDeviceProperties");
  m.name = prop.name;
  check(cudaStreamCreateWithFlags(&m.stream, cudaStreamNonBlocking), "cudaStreamCreate");
  check(cublasCreate(&m.blas), "cublasCreate");
  check(cublasSetStream(m.blas, m.stream), "cublasSetStream");
  // Full FP32 (no TF32 tensor cores): the CPU backend is the reference these gradients are
  // compared with.
  check(cublasSetMathMode(m.blas, CUBLAS_PEDANTIC_MATH), "cublasSetMathMode");
  m.train.resize(train_features.size(), "cudaMalloc (training set)");
  m.labels.resize(train_labels.size(), "cudaMalloc (training labels)");
  // On the batches' stream (a non-blocking one, which the legacy default stream's copies
  // would not order with), and finished before the first batch.
  check(cudaMemcpyAsync(m.train.data, train_features.data(), train_features.size() * sizeof(float),
                        cudaMemcpyHostToDevice, m.stream),
        "cudaMemcpyAsync (training set)");
  check(cudaMemcpyAsync(m.labels.data, train_labels.data(),
                        train_labels.size() * sizeof(std::int32_t), cudaMemcpyHostToDevice,
                        m.stream),
        "cudaMemcpyAsync (training labels)");
  check(cudaStreamSynchronize(m.stream), "cudaStreamSynchronize");
  m.bus.host_to_device_bytes += static_cast<std::int64_t>(
      train_features.size() * sizeof(float) + train_labels.size() * sizeof(std::int32_t));
  // Nodes per device batch: what three quarters of the device's memory holds (so that
  // cuBLAS's workspace still fits), from its total, not its free memory, so that the chunks
  // and with them a run's results do not depend on what else runs on the GPU; at most
  // max_nodes_per_batch (the kernels index nodes by blockIdx.y, at most 65,535).
  std::size_t free_bytes = 0, total_bytes = 0;
  check(cudaMemGetInfo(&free_bytes, &total_bytes), "cudaMemGetInfo");
  const std::size_t fits =
      (total_bytes / 4 * 3 - std::min(total_bytes / 4 * 3, train_features.size() * sizeof(float))) /
      m.bytes_per_node();
  m.max_nodes = static_cast<int>(std::clamp<std::size_t>(
      fits, 1, std::min<std::size_t>(kMaxGridY, static_cast<std::size_t>(max_nodes_per_batch))));
}

DeviceMlp::Impl::~Impl() {
  // Also after a constructor that threw; the arrays free themselves after this body.
  if (blas != nullptr)
    cublasDestroy(blas);
  if (stream != nullptr)
    cudaStreamDestroy(stream);
}

DeviceMlp::~DeviceMlp() = default;

void DeviceMlp::compute(std::span<GradientJob> jobs) {
  Impl& m = *impl_;
  // Jobs of one batch size share strided GEMMs; the orderer may give a node fewer examples
  // at the end of its data, so group by size (in job order) and run each group in chunks
  // of what fits on the device.
  m.group.reserve(jobs.size());
  std::size_t done = 0;
  std::vector<char> taken; // sizes other than the usual one are rare: only then allocate
  while (done < jobs.size()) {
    std::size_t first = 0;
    while (first < jobs.size() && !taken.empty() && taken[first] != 0)
      ++first;
    const std::size_t n = jobs[first].indices.size();
    if (n < 1 || n > static_cast<std::size_t>(m.batch_size))
      throw std::invalid_argument("DeviceMlp: a job's batch is empty or larger than batch_size");
    m.group.clear();
    for (std::size_t j = first; j < jobs.size(); ++j)
      if ((taken.empty() || taken[j] == 0) && jobs[j].indices.size() == n)
        m.group.push_back(j);
    done += m.group.size();
    if (done < jobs.size()) {
      if (taken.empty())
        taken.assign(jobs.size(), 0);
      for (std::size_t j : m.group)
        taken[j] = 1;
    }
    m.reserve(m.group.size());
    for (std::size_t start = 0; start < m.group.size(); start += m.capacity) {
      const std::size_t count = std::min(m.capacity, m.group.size() - start);
      m.run(jobs, m.group.data() + start, static_cast<int>(count), static_cast<int>(n));
    }
  }
}

TransferStats DeviceMlp::transfers() const {
  return impl_->bus;
}

std::string DeviceMlp::device_name() const {
  return impl_->name;
}

std::string device_unavailable_reason() {
  int count = 0;
  const cudaError_t e = cudaGetDeviceCount(&count);
  if (e != cudaSuccess) {
    cudaGetLastError(); // clear the sticky-free error so later calls start clean
    return std::string("no CUDA device found (") + cudaGetErrorString(e) + ")";
  }
  if (count == 0)
    return "no CUDA device found";
  // The kernels are built for sm_80 and sm_90 (CMAKE_CUDA_ARCHITECTURES): refuse an older
  // GPU here, before a run, rather than at its first kernel launch.
  int device = 0, major = 0;
  if (cudaGetDevice(&device) != cudaSuccess ||
      cudaDeviceGetAttribute(&major, cudaDevAttrComputeCapabilityMajor, device) != cudaSuccess)
    return "no usable CUDA device found (its compute capability could not be read)";
  if (major < 8)
    return "no usable CUDA device found (compute capability " + std::to_string(major) +
           ".x; dtsim's kernels need 8.0 or newer)";
  return {};
}

} // namespace dtsim::cuda
