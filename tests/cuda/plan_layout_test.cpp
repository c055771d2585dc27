// SPDX-License-Identifier: MIT
// The resident store's plan layout (several arrays in one buffer, one copy up); no GPU
// needed.
#include "cuda/plan_layout.hpp"

#include <cstdint>
#include <doctest/doctest.h>
#include <initializer_list>

using dtsim::cuda::PlanLayout;

TEST_SUITE("cuda") {
  TEST_CASE("Plan layout: arrays one after another, each aligned, none overlapping") {
    PlanLayout layout;
    const std::size_t nodes = layout.add<int>(5);          // 20 bytes
    const std::size_t self = layout.add<const float*>(5);  // 40
    const std::size_t weights = layout.add<float>(3);      // 12
    const std::size_t first = layout.add<int>(6);          // 24
    const std::size_t none = layout.add<float>(0);         // an empty array takes no room
    const std::size_t last = layout.add<std::uint64_t>(1); // 8
    CHECK(nodes == 0);
    CHECK(self == 32);
    CHECK(weights == 80);
    CHECK(first == 96);
    CHECK(none == 128);
    CHECK(last == 128);
    CHECK(layout.bytes() == 136);
    for (const std::size_t at : {nodes, self, weights, first, none, last})
      CHECK(at % PlanLayout::kAlign == 0);
  }

  TEST_CASE("Plan layout: an empty layout copies nothing") {
    CHECK(PlanLayout{}.bytes() == 0);
  }
}
