// SPDX-License-Identifier: MIT
// How a device pass splits a batch of gradient jobs: by minibatch size (strided GEMMs need
// one shape), then into chunks of what fits on the device, and a resident chunk's order.
// Host code, tested without a GPU.
#pragma once

#include "sim/engine/batched_gradients.hpp"

#include <algorithm>
#include <cstddef>
#include <span>
#include <stdexcept>
#include <vector>

namespace dtsim::cuda {

// jobs[ids] in node order (each node has at most one job in a batch).
inline void sort_ids_by_node(std::span<const GradientJob> jobs, std::vector<std::size_t>& ids) {
  std::sort(ids.begin(), ids.end(),
            [jobs](std::size_t a, std::size_t b) { return jobs[a].node < jobs[b].node; });
}

// Calls run(job_ids, count, n) for every chunk: jobs of one minibatch size n in job order
// (with by_node, in node order: a resident backend's chunks of a round that does not fit
// one chunk are then ranges of nodes too, see sort_by_node), the sizes in the order of
// their first job, each size's jobs in chunks of at most capacity(size of the group), which
// may grow a device's buffers and returns how many nodes they hold (at least 1). `group` is
// reused storage. Throws std::invalid_argument for an empty minibatch or one larger than
// batch_size.
template <class Capacity, class Run>
void for_each_job_chunk(std::span<const GradientJob> jobs, int batch_size,
                        std::vector<std::size_t>& group, Capacity capacity, Run run,
                        bool by_node = false) {
  group.reserve(jobs.size());
  std::size_t done = 0;
  std::vector<char> taken; // sizes other than the usual one are rare: only then allocate
  while (done < jobs.size()) {
    std::size_t first = 0;
    while (first < jobs.size() && !taken.empty() && taken[first] != 0)
      ++first;
    const std::size_t n = jobs[first].indices.size();
    if (n < 1 || n > static_cast<std::size_t>(batch_size))
      throw std::invalid_argument("device gradients: a job's batch is empty or too large");
    group.clear();
    for (std::size_t j = first; j < jobs.size(); ++j)
      if ((taken.empty() || taken[j] == 0) && jobs[j].indices.size() == n)
        group.push_back(j);
    done += group.size();
    if (done < jobs.size()) {
      if (taken.empty())
        taken.assign(jobs.size(), 0);
      for (std::size_t j : group)
        taken[j] = 1;
    }
    if (by_node)
      sort_ids_by_node(jobs, group);
    const std::size_t chunk = capacity(group.size());
    for (std::size_t start = 0; start < group.size(); start += chunk)
      run(group.data() + start, static_cast<int>(std::min(chunk, group.size() - start)),
          static_cast<int>(n));
  }
}

// A resident chunk's jobs (jobs[ids[b]] for b < count) in node order, into `sorted`; true
// when their nodes are one consecutive range, so that the pass can run on the nodes' own rows
// (no copies). A synchronous round's nodes are, but the engine hands them over in the order
// their neighbours' messages completed, not in node order. Each job's gradient and loss do
// not depend on its place in the chunk, so the order is free to choose.
inline bool sort_by_node(std::span<const GradientJob> jobs, const std::size_t* ids, int count,
                         std::vector<std::size_t>& sorted) {
  sorted.assign(ids, ids + count);
  sort_ids_by_node(jobs, sorted);
  for (std::size_t b = 1; b < sorted.size(); ++b)
    if (jobs[sorted[b]].node != jobs[sorted[0]].node + static_cast<int>(b))
      return false;
  return true;
}

} // namespace dtsim::cuda
