// SPDX-License-Identifier: MIT
// DataSampler: each local epoch is a permutation of the node's examples.
#include "sim/engine/data_sampler.hpp"

#include <algorithm>
#include <doctest/doctest.h>

using namespace dtsim;

TEST_SUITE("engine") {
  TEST_CASE("DataSampler: every epoch visits each example once, in a fresh order") {
    std::vector<std::uint32_t> idx = {5, 9, 11, 20, 33, 41};
    DataSampler s(idx, 3, 0);
    std::vector<std::uint32_t> epoch1(6), epoch2(6);
    s.next_batch(std::span<std::uint32_t>(epoch1).first(4));
    s.next_batch(std::span<std::uint32_t>(epoch1).last(2));
    s.next_batch(epoch2);
    auto sorted = [](std::vector<std::uint32_t> v) {
      std::sort(v.begin(), v.end());
      return v;
    };
    CHECK(sorted(epoch1) == idx);
    CHECK(sorted(epoch2) == idx);
    CHECK(epoch1 != epoch2);
    CHECK(s.epochs_started() == 2);
  }

  TEST_CASE("DataSampler: batches larger than the node's data wrap around") {
    DataSampler s({1, 2, 3}, 1, 2);
    std::vector<std::uint32_t> b(7);
    s.next_batch(b);
    CHECK(std::count(b.begin(), b.end(), 1u) >= 2);
    CHECK(s.epochs_started() == 3);
  }
}
