// SPDX-License-Identifier: MIT
// MessageSlabs: every message in a slab of its own range, at a 256-byte boundary, none
// overlapping another, the slabs bounded in bytes and in messages.
#include "cuda/message_slabs.hpp"

#include <cstddef>
#include <doctest/doctest.h>
#include <vector>

using dtsim::cuda::MessageSlabs;

TEST_SUITE("cuda") {
  TEST_CASE("MessageSlabs: messages aligned, disjoint and within their slab") {
    // The goal row's MLP (one vector of 235,146 floats, and two: momentum tracking's), a
    // vector of a multiple of 64 floats, tiny ones, and one larger than a slab's bytes.
    for (const std::size_t floats :
         {std::size_t{235146}, std::size_t{2 * 235146}, std::size_t{4096}, std::size_t{1},
          std::size_t{65}, std::size_t{20'000'000}}) {
      CAPTURE(floats);
      const MessageSlabs slabs(floats);
      const std::size_t per = slabs.messages_per_slab();
      CHECK(per >= 1);
      CHECK(per <= MessageSlabs::kMostPerSlab);
      CHECK((per == 1 || slabs.slab_floats() * 4 <= MessageSlabs::kSlabBytes));
      // Every message of the first three slabs: in its slab, aligned, after the one before
      // with no overlap, and the first of each slab at its start.
      std::vector<std::size_t> end_in_slab(3, 0);
      for (std::size_t id = 0; id < 3 * per; ++id) {
        const std::size_t slab = slabs.slab_of(id), at = slabs.offset_of(id);
        REQUIRE(slab == id / per);
        CHECK(at % MessageSlabs::kAlignFloats == 0);
        CHECK(at >= end_in_slab[slab]);
        CHECK(at + floats <= slabs.slab_floats());
        if (id % per == 0)
          CHECK(at == 0);
        end_in_slab[slab] = at + floats;
      }
    }
  }

  TEST_CASE("MessageSlabs: the goal row's 2,048 messages take 32 slabs of under 64 MiB") {
    const MessageSlabs slabs(235146);
    CHECK(slabs.messages_per_slab() == 64);
    CHECK(slabs.slab_of(2047) + 1 == 32);
    // 235,146 floats rounded up to 235,200 (a 256-byte multiple): 57.4 MiB a slab.
    CHECK(slabs.slab_floats() == 64 * 235200);
    // A message larger than a slab's bytes: one a slab, as one allocation each before.
    CHECK(MessageSlabs(20'000'000).messages_per_slab() == 1);
  }
}
