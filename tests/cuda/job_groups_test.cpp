// SPDX-License-Identifier: MIT
// How the device passes split a batch of jobs: by minibatch size, then into chunks.
#include "cuda/job_groups.hpp"

#include <doctest/doctest.h>
#include <stdexcept>
#include <vector>

using namespace dtsim;

namespace {

struct Chunk {
  std::vector<std::size_t> ids;
  int n = 0;
  bool operator==(const Chunk&) const = default;
};

// Jobs with these minibatch sizes, split with chunks of at most `capacity` nodes.
// nodes[j] is job j's node (default: j); by_node as for_each_job_chunk's.
std::vector<Chunk> chunks_of(const std::vector<std::size_t>& sizes, int batch_size,
                             std::size_t capacity, std::vector<std::size_t>* group_sizes = nullptr,
                             std::vector<int> nodes = {}, bool by_node = false) {
  std::vector<std::vector<std::uint32_t>> indices;
  for (std::size_t s : sizes)
    indices.emplace_back(s, 0u);
  std::vector<GradientJob> jobs;
  for (std::size_t j = 0; j < indices.size(); ++j)
    jobs.push_back({{}, indices[j], {}, 0.0, nodes.empty() ? static_cast<int>(j) : nodes[j]});
  std::vector<Chunk> chunks;
  std::vector<std::size_t> group;
  cuda::for_each_job_chunk(
      jobs, batch_size, group,
      [&](std::size_t group_nodes) {
        if (group_sizes != nullptr)
          group_sizes->push_back(group_nodes);
        return capacity;
      },
      [&](const std::size_t* ids, int count, int n) {
        chunks.push_back({std::vector<std::size_t>(ids, ids + count), n});
      },
      by_node);
  return chunks;
}

} // namespace

TEST_SUITE("cuda") {
  TEST_CASE("Device job chunks: one minibatch size per chunk, job order kept, capacity respected") {
    // A synchronous round: one size, one chunk, or chunks of the capacity.
    CHECK(chunks_of({32, 32, 32}, 32, 8) == std::vector<Chunk>{{{0, 1, 2}, 32}});
    CHECK(chunks_of({32, 32, 32, 32, 32}, 32, 2) ==
          std::vector<Chunk>{{{0, 1}, 32}, {{2, 3}, 32}, {{4}, 32}});
    // An orderer's end of data gives some nodes fewer examples: each size is a group, in the
    // order of its first job.
    std::vector<std::size_t> groups;
    CHECK(chunks_of({32, 32, 15, 32, 15, 7}, 32, 2, &groups) ==
          std::vector<Chunk>{{{0, 1}, 32}, {{3}, 32}, {{2, 4}, 15}, {{5}, 7}});
    CHECK(groups == std::vector<std::size_t>{3, 2, 1}); // what the device reserves for
    CHECK(chunks_of({5}, 32, 1) == std::vector<Chunk>{{{0}, 5}});
    CHECK(chunks_of({}, 32, 4).empty());
  }

  TEST_CASE("Device job chunks: a resident round larger than a chunk is cut into node ranges") {
    // A synchronous round of 6 nodes reaching the device permuted, chunks of 2 nodes: by
    // node, every chunk is a range (in place); in job order none would be.
    const std::vector<std::size_t> sizes(6, 32);
    const std::vector<int> nodes{0, 2, 1, 3, 5, 4};
    CHECK(chunks_of(sizes, 32, 2, nullptr, nodes, true) ==
          std::vector<Chunk>{{{0, 2}, 32}, {{1, 3}, 32}, {{5, 4}, 32}});
    CHECK(chunks_of(sizes, 32, 2, nullptr, nodes, false) ==
          std::vector<Chunk>{{{0, 1}, 32}, {{2, 3}, 32}, {{4, 5}, 32}});
    // By node within each minibatch size, the sizes still in the order of their first job.
    CHECK(chunks_of({15, 32, 32, 15}, 32, 4, nullptr, {3, 9, 1, 2}, true) ==
          std::vector<Chunk>{{{3, 0}, 15}, {{2, 1}, 32}});
  }

  TEST_CASE("Device job chunks: a resident chunk in node order, in place when one range") {
    // Jobs of these nodes, in the engine's order (a synchronous round's arrive permuted:
    // each node starts when its last neighbour's message comes).
    const auto order = [](std::vector<int> nodes, std::vector<std::size_t> ids,
                          std::vector<std::size_t>& sorted) {
      std::vector<GradientJob> jobs(nodes.size());
      for (std::size_t j = 0; j < nodes.size(); ++j)
        jobs[j].node = nodes[j];
      return cuda::sort_by_node(jobs, ids.data(), static_cast<int>(ids.size()), sorted);
    };
    std::vector<std::size_t> sorted;
    CHECK(order({0, 2, 1, 3, 5, 4}, {0, 1, 2, 3, 4, 5}, sorted));
    CHECK(sorted == std::vector<std::size_t>{0, 2, 1, 3, 5, 4});
    // A chunk of a larger group: ids into the batch's jobs, nodes 7, 5, 6.
    CHECK(order({9, 7, 0, 5, 6}, {1, 3, 4}, sorted));
    CHECK(sorted == std::vector<std::size_t>{3, 4, 1});
    CHECK(order({4}, {0}, sorted));
    CHECK(sorted == std::vector<std::size_t>{0});
    // Not one range (a node missing, or the chunk of an asynchronous batch): still sorted.
    CHECK_FALSE(order({3, 0, 1}, {0, 1, 2}, sorted));
    CHECK(sorted == std::vector<std::size_t>{1, 2, 0});
    CHECK_FALSE(order({8, 2}, {0, 1}, sorted));
  }

  TEST_CASE("Device job chunks: an empty or too large minibatch is refused") {
    CHECK_THROWS_AS(chunks_of({32, 0}, 32, 4), std::invalid_argument);
    CHECK_THROWS_AS(chunks_of({33}, 32, 4), std::invalid_argument);
  }
}
