// SPDX-License-Identifier: MIT
// DeviceMlp: the batched forward/backward kernels and cuBLAS calls.
#include "cuda/device_mlp.hpp"

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

unsigned blocks_for(std::size_t items) {
  return static_cast<unsigned>((items + kThreads - 1) / kThreads);
}

// x[b] (features x n) = the training columns idx[b][0..n).
__global__ void gather_minibatches(const float* __restrict__ train, int features,
                                   const std::uint32_t* __restrict__ idx, int n,
                                   float* __restrict__ x) {
  const int b = static_cast<int>(blockIdx.y);
  const std::size_t e = static_cast<std::size_t>(blockIdx.x) * blockDim.x + threadIdx.x;
  const std::size_t per_node = static_cast<std::size_t>(features) * n;
  if (e >= per_node)
    return;
  const std::size_t k = e / static_cast<std::size_t>(features);
  const std::size_t f = e % static_cast<std::size_t>(features);
  const std::size_t row = idx[static_cast<std::size_t>(b) * n + k];
  x[b * per_node + e] = train[row * features + f];
}

// z[b] (out x n) += bias of node b, then ReLU on hidden layers.
__global__ void add_bias(float* __restrict__ z, int out, int n, const float* __restrict__ params,
                         std::size_t num_params, std::size_t bias_offset, bool relu) {
  const int b = static_cast<int>(blockIdx.y);
  const std::size_t e = static_cast<std::size_t>(blockIdx.x) * blockDim.x + threadIdx.x;
  const std::size_t per_node = static_cast<std::size_t>(out) * n;
  if (e >= per_node)
    return;
  const std::size_t j = e % static_cast<std::size_t>(out);
  float v = z[b * per_node + e] + params[b * num_params + bias_offset + j];
  z[b * per_node + e] = relu ? fmaxf(v, 0.0f) : v;
}

// Per example: dlogits = (softmax - onehot) / n, and its cross-entropy in column_loss.
__global__ void softmax_xent(const float* __restrict__ logits, int classes, int n,
                             const std::int32_t* __restrict__ labels,
                             const std::uint32_t* __restrict__ idx, float* __restrict__ dlogits,
                             double* __restrict__ column_loss) {
  const int b = static_cast<int>(blockIdx.y);
  const int k = static_cast<int>(blockIdx.x * blockDim.x + threadIdx.x);
  if (k >= n)
    return;
  const std::size_t col = (static_cast<std::size_t>(b) * n + k) * classes;
  const float* z = logits + col;
  float* d = dlogits + col;
  const int y = labels[idx[static_cast<std::size_t>(b) * n + k]];
  float m = z[0];
  for (int c = 1; c < classes; ++c)
    m = fmaxf(m, z[c]);
  float sum = 0.0f;
  for (int c = 0; c < classes; ++c) {
    d[c] = expf(z[c] - m);
    sum += d[c];
  }
  column_loss[static_cast<std::size_t>(b) * n + k] = static_cast<double>(logf(sum) - (z[y] - m));
  const float inv_n = 1.0f / static_cast<float>(n);
  for (int c = 0; c < classes; ++c)
    d[c] *= inv_n / sum;
  d[y] -= inv_n;
}

// loss[b] = mean of node b's column losses, summed in example order.
__global__ void mean_loss(const double* __restrict__ column_loss, int n, int nodes,
                          double* __restrict__ loss) {
  const int b = static_cast<int>(blockIdx.x * blockDim.x + threadIdx.x);
  if (b >= nodes)
    return;
  double s = 0.0;
  for (int k = 0; k < n; ++k)
    s += column_loss[static_cast<std::size_t>(b) * n + k];
  loss[b] = s / n;
}

// db[b] = row sums of dz[b] (out x n), summed in example order, written into node b's
// gradient.
__global__ void bias_gradient(const float* __restrict__ dz, int out, int n,
                              float* __restrict__ grads, std::size_t num_params,
                              std::size_t bias_offset) {
  const int b = static_cast<int>(blockIdx.y);
  const int j = static_cast<int>(blockIdx.x * blockDim.x + threadIdx.x);
  if (j >= out)
    return;
  const float* row = dz + static_cast<std::size_t>(b) * out * n + j;
  float s = 0.0f;
  for (int k = 0; k < n; ++k)
    s += row[static_cast<std::size_t>(k) * out];
  grads[b * num_params + bias_offset + j] = s;
}

// d = d where the layer's (post-ReLU) output a > 0, else 0.
__global__ void relu_backward(const float* __restrict__ a, float* __restrict__ d,
                              std::size_t count) {
  const std::size_t e = static_cast<std::size_t>(blockIdx.x) * blockDim.x + threadIdx.x;
  if (e < count && !(a[e] > 0.0f))
    d[e] = 0.0f;
}

template <class T> struct DeviceArray {
  T* data = nullptr;
  std::size_t size = 0;
  void resize(std::size_t n, const char* what) {
    if (n <= size)
      return;
    release();
    check(cudaMalloc(reinterpret_cast<void**>(&data), n * sizeof(T)), what);
    size = n;
  }
  void release() {
    if (data != nullptr)
      cudaFree(data);
    data = nullptr;
    size = 0;
  }
};

template <class T> struct PinnedArray {
  T* data = nullptr;
  std::size_t size = 0;
  void resize(std::size_t n, const char* what) {
    if (n <= size)
      return;
    release();
    check(cudaMallocHost(reinterpret_cast<void**>(&data), n * sizeof(T)), what);
    size = n;
  }
  void release() {
    if (data != nullptr)
      cudaFreeHost(data);
    data = nullptr;
    size = 0;
  }
};

struct Layer {
  int in = 0;
  int out = 0;
  std::size_t offset = 0; // W; the bias follows at offset + out * in
};

} // namespace

struct DeviceMlp::Impl {
  std::vector<Layer> layers;
  std::size_t num_params = 0;
  int features = 0;
  int batch_size = 0;
  int widest = 0;
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
  DeviceArray<std::uint32_t> idx;
  DeviceArray<double> column_loss, loss;
  PinnedArray<std::uint32_t> host_idx;
  PinnedArray<double> host_loss;
  std::vector<std::size_t> group; // jobs of one batch size
  TransferStats bus;

  std::size_t bytes_per_node() const {
    std::size_t floats = 2 * num_params + static_cast<std::size_t>(features) * batch_size +
                         2 * static_cast<std::size_t>(widest) * batch_size;
    for (const Layer& l : layers)
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
    params.resize(c * num_params, "cudaMalloc (node models)");
    grads.resize(c * num_params, "cudaMalloc (gradients)");
    x.resize(c * features * n, "cudaMalloc (minibatches)");
    for (std::size_t l = 0; l < layers.size(); ++l)
      act[l].resize(c * layers[l].out * n, "cudaMalloc (activations)");
    for (auto& d : delta)
      d.resize(c * widest * n, "cudaMalloc (deltas)");
    idx.resize(c * n, "cudaMalloc (indices)");
    column_loss.resize(c * n, "cudaMalloc (losses)");
    loss.resize(c, "cudaMalloc (losses)");
    host_idx.resize(c * n, "cudaMallocHost (indices)");
    host_loss.resize(c, "cudaMallocHost (losses)");
    capacity = c;
  }

  void gemm(cublasOperation_t ta, cublasOperation_t tb, int m, int n, int k, const float* a,
            int lda, long long stride_a, const float* b, int ldb, long long stride_b, float* c,
            int ldc, long long stride_c, int count) {
    const float one = 1.0f, zero = 0.0f;
    check(cublasSgemmStridedBatched(blas, ta, tb, m, n, k, &one, a, lda, stride_a, b, ldb, stride_b,
                                    &zero, c, ldc, stride_c, count),
          "cublasSgemmStridedBatched");
  }

  // Jobs job_ids[0..count) all have batch size n; count <= capacity.
  void run(std::span<GradientJob> jobs, const std::size_t* job_ids, int count, int n) {
    const auto P = num_params;
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

    const dim3 grid_x(blocks_for(static_cast<std::size_t>(features) * n), count);
    gather_minibatches<<<grid_x, kThreads, 0, stream>>>(train.data, features, idx.data, n, x.data);
    const float* input = x.data;
    for (std::size_t l = 0; l < layers.size(); ++l) {
      const Layer& L = layers[l];
      gemm(CUBLAS_OP_N, CUBLAS_OP_N, L.out, n, L.in, params.data + L.offset, L.out,
           static_cast<long long>(P), input, L.in, static_cast<long long>(L.in) * n, act[l].data,
           L.out, static_cast<long long>(L.out) * n, count);
      const dim3 grid(blocks_for(static_cast<std::size_t>(L.out) * n), count);
      add_bias<<<grid, kThreads, 0, stream>>>(act[l].data, L.out, n, params.data, P,
                                              L.offset + static_cast<std::size_t>(L.out) * L.in,
                                              l + 1 < layers.size());
      input = act[l].data;
    }
    const std::size_t last = layers.size() - 1;
    const dim3 grid_n(blocks_for(static_cast<std::size_t>(n)), count);
    softmax_xent<<<grid_n, kThreads, 0, stream>>>(act[last].data, layers[last].out, n, labels.data,
                                                  idx.data, delta[last % 2].data, column_loss.data);
    mean_loss<<<blocks_for(nodes), kThreads, 0, stream>>>(column_loss.data, n, count, loss.data);
    for (std::size_t l = last + 1; l-- > 0;) {
      const Layer& L = layers[l];
      const float* in = l == 0 ? x.data : act[l - 1].data;
      const float* dz = delta[l % 2].data;
      gemm(CUBLAS_OP_N, CUBLAS_OP_T, L.out, L.in, n, dz, L.out, static_cast<long long>(L.out) * n,
           in, L.in, static_cast<long long>(L.in) * n, grads.data + L.offset, L.out,
           static_cast<long long>(P), count);
      const dim3 grid_b(blocks_for(static_cast<std::size_t>(L.out)), count);
      bias_gradient<<<grid_b, kThreads, 0, stream>>>(
          dz, L.out, n, grads.data, P, L.offset + static_cast<std::size_t>(L.out) * L.in);
      if (l > 0) {
        float* dx = delta[(l - 1) % 2].data;
        gemm(CUBLAS_OP_T, CUBLAS_OP_N, L.in, n, L.out, params.data + L.offset, L.out,
             static_cast<long long>(P), dz, L.out, static_cast<long long>(L.out) * n, dx, L.in,
             static_cast<long long>(L.in) * n, count);
        const std::size_t total = nodes * static_cast<std::size_t>(L.in) * n;
        relu_backward<<<blocks_for(total), kThreads, 0, stream>>>(in, dx, total);
      }
    }
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
                     std::span<const std::int32_t> train_labels, int batch_size)
    : impl_(std::make_unique<Impl>()) {
  Impl& m = *impl_;
  if (widths.size() < 2 || batch_size < 1 || train_labels.empty() ||
      train_features.size() != static_cast<std::size_t>(widths.front()) * train_labels.size())
    throw std::invalid_argument("DeviceMlp: inconsistent widths, batch size or training set");
  for (std::size_t l = 0; l + 1 < widths.size(); ++l) {
    m.layers.push_back({widths[l], widths[l + 1], m.num_params});
    m.num_params += static_cast<std::size_t>(widths[l + 1]) * (widths[l] + 1);
    m.widest = std::max(m.widest, widths[l + 1]);
  }
  m.features = widths.front();
  m.batch_size = batch_size;
  m.act.resize(m.layers.size());
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
  check(cudaMemcpy(m.train.data, train_features.data(), train_features.size() * sizeof(float),
                   cudaMemcpyHostToDevice),
        "cudaMemcpy (training set)");
  check(cudaMemcpy(m.labels.data, train_labels.data(), train_labels.size() * sizeof(std::int32_t),
                   cudaMemcpyHostToDevice),
        "cudaMemcpy (training labels)");
  m.bus.host_to_device_bytes += static_cast<std::int64_t>(
      train_features.size() * sizeof(float) + train_labels.size() * sizeof(std::int32_t));
  std::size_t free_bytes = 0, total_bytes = 0;
  check(cudaMemGetInfo(&free_bytes, &total_bytes), "cudaMemGetInfo");
  // Three quarters of what is free, so that cuBLAS's own workspace still fits.
  m.max_nodes = static_cast<int>(std::max<std::size_t>(
      1, std::min<std::size_t>(free_bytes / 4 * 3 / m.bytes_per_node(), 1 << 20)));
}

DeviceMlp::~DeviceMlp() {
  Impl& m = *impl_;
  if (m.blas != nullptr)
    cublasDestroy(m.blas);
  for (auto* a : {&m.train, &m.params, &m.grads, &m.x, &m.delta[0], &m.delta[1]})
    a->release();
  for (auto& a : m.act)
    a.release();
  m.labels.release();
  m.idx.release();
  m.column_loss.release();
  m.loss.release();
  m.host_idx.release();
  m.host_loss.release();
  if (m.stream != nullptr)
    cudaStreamDestroy(m.stream);
}

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
  return {};
}

} // namespace dtsim::cuda
