// SPDX-License-Identifier: MIT
// Node-data training loss and the streamed parallel herding bound, chunked on oneTBB.
#include "sim/engine/epoch_probe.hpp"

#include "sim/core/errors.hpp"
#include "sim/engine/herding.hpp"

#include <algorithm>
#include <cmath>
#include <tbb/parallel_for.h>

namespace dtsim {
namespace {
constexpr std::size_t kLossChunk = 256;
constexpr std::size_t kGroup = 16; // herding chunks in flight at once
// Per-example buffer per thread: small enough to stay in L2 while the prefix sum reads it
// (1 MiB), but at least 32 examples: both passes run the model on one chunk at a time, and
// its batched kernels (LeNet's blocks of 8 examples, the dense GEMMs) waste most of their
// work on chunks of 2 or 4. Large models then stream the buffer from memory once.
constexpr std::size_t kPerExampleFloats = 256u << 10;
constexpr std::size_t kMinHerdingChunk = 32;
} // namespace

EpochProbe::EpochProbe(const Model& model, const Dataset& train, const Partition& partition,
                       int batch_size, bool herding)
    : model_(model), train_(train), partition_(partition), batch_size_(batch_size),
      herding_(herding), herding_chunk_(static_cast<int>(std::clamp<std::size_t>(
                             kPerExampleFloats / std::max<std::size_t>(1, model.num_params()),
                             kMinHerdingChunk, kLossChunk))),
      max_batch_(static_cast<int>(kLossChunk)) {
  DTSIM_ASSERT(!herding || model.supports_per_example_grads(),
               "the herding bound needs per-example gradients");
  for (std::size_t i = 0; i < partition.node_indices.size(); ++i)
    for (std::size_t first = 0; first < partition.node_indices[i].size(); first += kLossChunk)
      loss_jobs_.push_back({static_cast<int>(i), first,
                            std::min(kLossChunk, partition.node_indices[i].size() - first)});
  loss_partial_.resize(loss_jobs_.size());
  if (herding) {
    const auto d = static_cast<Eigen::Index>(model.num_params());
    group_sums_.resize(d, static_cast<Eigen::Index>(kGroup));
    group_offsets_.resize(d, static_cast<Eigen::Index>(kGroup));
    total_.resize(d);
    mean_.resize(d);
    group_max_.resize(kGroup);
  }
}

EpochProbe::Scratch& EpochProbe::scratch() {
  std::unique_ptr<Scratch>& p = scratch_.local();
  if (!p) {
    p = std::make_unique<Scratch>();
    p->workspace = model_.make_workspace(max_batch_);
    p->batch.resize(train_.num_features(), max_batch_);
    p->labels.resize(static_cast<std::size_t>(max_batch_));
    p->grad.resize(static_cast<Eigen::Index>(model_.num_params()));
    if (herding_) {
      p->per_example.resize(static_cast<Eigen::Index>(model_.num_params()) * herding_chunk_);
      p->prefix.resize(static_cast<Eigen::Index>(model_.num_params()));
      p->peak.resize(static_cast<Eigen::Index>(model_.num_params()));
    }
  }
  return *p;
}

std::size_t EpochProbe::scratch_bytes() const {
  std::size_t bytes = 0;
  for (const auto& p : scratch_)
    if (p)
      bytes += sizeof(float) *
               static_cast<std::size_t>(p->batch.size() + p->grad.size() + p->per_example.size() +
                                        p->prefix.size() + p->peak.size());
  if (herding_)
    bytes += sizeof(float) * static_cast<std::size_t>(group_sums_.size() + mean_.size()) +
             sizeof(double) * static_cast<std::size_t>(group_offsets_.size() + total_.size()) +
             sizeof(std::uint32_t) * sequence_.capacity();
  return bytes;
}

BatchView EpochProbe::gather(Scratch& s, std::span<const std::uint32_t> ids) const {
  DTSIM_ASSERT(ids.size() <= static_cast<std::size_t>(max_batch_), "probe chunk too large");
  for (std::size_t k = 0; k < ids.size(); ++k) {
    s.batch.col(static_cast<Eigen::Index>(k)) = train_.features.col(ids[k]);
    s.labels[k] = train_.labels[ids[k]];
  }
  return {s.batch.data(), train_.num_features(), static_cast<int>(ids.size()), s.labels.data()};
}

double EpochProbe::node_train_loss(std::span<const std::span<const float>> models) {
  const std::size_t nodes = partition_.node_indices.size();
  DTSIM_ASSERT(models.size() == 1 || models.size() == nodes, "one model, or one per node");
  tbb::parallel_for(std::size_t{0}, loss_jobs_.size(), [&](std::size_t j) {
    const Job& job = loss_jobs_[j];
    const auto ids =
        std::span<const std::uint32_t>(partition_.node_indices[static_cast<std::size_t>(job.node)]);
    Scratch& s = scratch();
    const auto& params = models[models.size() == 1 ? 0 : static_cast<std::size_t>(job.node)];
    loss_partial_[j] =
        model_.evaluate(params, gather(s, ids.subspan(job.first, job.count)), *s.workspace);
  });
  // Jobs are in node order, chunks in order within a node: a serial, fixed-order reduction.
  std::vector<double> node_loss(nodes, 0.0);
  std::vector<std::int64_t> node_count(nodes, 0);
  for (std::size_t j = 0; j < loss_jobs_.size(); ++j) {
    const auto node = static_cast<std::size_t>(loss_jobs_[j].node);
    node_loss[node] += loss_partial_[j].loss_sum;
    node_count[node] += loss_partial_[j].count;
  }
  double sum = 0;
  int counted = 0;
  for (std::size_t i = 0; i < nodes; ++i)
    if (node_count[i] > 0) {
      sum += node_loss[i] / static_cast<double>(node_count[i]);
      ++counted;
    }
  return counted > 0 ? sum / counted : 0.0;
}

void EpochProbe::chunk_sum(std::span<const float> params, std::span<const std::uint32_t> ids,
                           std::span<float> out) {
  Scratch& s = scratch();
  model_.loss_and_grad(params, gather(s, ids),
                       {s.grad.data(), static_cast<std::size_t>(s.grad.size())}, *s.workspace);
  as_vec(out) = s.grad * static_cast<float>(ids.size());
}

double EpochProbe::herding_bound(std::span<const float> params,
                                 std::span<const std::span<const std::uint32_t>> orders) {
  DTSIM_ASSERT(herding_, "EpochProbe built without the herding bound");
  interleave_orders(orders, batch_size_, sequence_);
  const std::size_t n = sequence_.size();
  if (n == 0)
    return 0.0;
  const auto c = static_cast<std::size_t>(herding_chunk_);
  const std::size_t chunks = (n + c - 1) / c;
  const std::size_t d = model_.num_params();
  auto ids = [&](std::size_t chunk) {
    return std::span<const std::uint32_t>(sequence_).subspan(chunk * c, std::min(c, n - chunk * c));
  };
  auto group_chunk_sums = [&](std::size_t g0, std::size_t gn) {
    tbb::parallel_for(std::size_t{0}, gn, [&](std::size_t j) {
      chunk_sum(params, ids(g0 + j), {group_sums_.col(static_cast<Eigen::Index>(j)).data(), d});
    });
  };

  // Pass 1: the mean over the whole sequence (chunk sums from the cheap batched gradient).
  total_.setZero();
  for (std::size_t g0 = 0; g0 < chunks; g0 += kGroup) {
    const std::size_t gn = std::min(kGroup, chunks - g0);
    group_chunk_sums(g0, gn);
    for (std::size_t j = 0; j < gn; ++j)
      total_ += group_sums_.col(static_cast<Eigen::Index>(j)).cast<double>();
  }
  const Eigen::VectorXd mean_d = total_ / static_cast<double>(n);
  mean_ = mean_d.cast<float>();

  // Pass 2, a group of chunks at a time: the prefix sum before each chunk (serial, in
  // double), then each chunk's per-example gradients from that offset (parallel).
  Eigen::VectorXd running = Eigen::VectorXd::Zero(static_cast<Eigen::Index>(d));
  double bound = 0.0;
  for (std::size_t g0 = 0; g0 < chunks; g0 += kGroup) {
    const std::size_t gn = std::min(kGroup, chunks - g0);
    group_chunk_sums(g0, gn);
    for (std::size_t j = 0; j < gn; ++j) {
      const auto col = static_cast<Eigen::Index>(j);
      group_offsets_.col(col) = running;
      running +=
          group_sums_.col(col).cast<double>() - static_cast<double>(ids(g0 + j).size()) * mean_d;
    }
    tbb::parallel_for(std::size_t{0}, gn, [&](std::size_t j) {
      const auto chunk_ids = ids(g0 + j);
      Scratch& s = scratch();
      const std::span<float> per{s.per_example.data(), d * chunk_ids.size()};
      model_.loss_and_per_example_grads(params, gather(s, chunk_ids), {s.grad.data(), d}, per,
                                        *s.workspace);
      s.prefix = group_offsets_.col(static_cast<Eigen::Index>(j)).cast<float>();
      // Per example: the prefix update and an element-wise running max of |prefix| (both
      // vectorised; no reduction per example), reduced once per chunk. In blocks that stay
      // in L1 between the two statements.
      constexpr Eigen::Index kBlock = 2048;
      s.peak.setZero();
      const auto dim = static_cast<Eigen::Index>(d);
      for (std::size_t k = 0; k < chunk_ids.size(); ++k) {
        const ConstVecMap g(per.data() + k * d, dim);
        for (Eigen::Index b = 0; b < dim; b += kBlock) {
          const Eigen::Index len = std::min(kBlock, dim - b);
          auto prefix = s.prefix.segment(b, len);
          prefix += g.segment(b, len) - mean_.segment(b, len);
          s.peak.segment(b, len) = s.peak.segment(b, len).cwiseMax(prefix.cwiseAbs());
        }
      }
      group_max_[j] = static_cast<double>(s.peak.maxCoeff());
    });
    for (std::size_t j = 0; j < gn; ++j)
      bound = std::max(bound, group_max_[j]);
  }
  return bound;
}

} // namespace dtsim
