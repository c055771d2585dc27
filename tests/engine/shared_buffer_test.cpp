// SPDX-License-Identifier: MIT
// BufferPool / SharedBuffer: sharing, recycling, write protection after sharing.
#include "sim/engine/shared_buffer.hpp"

#include <doctest/doctest.h>
#include <stdexcept>

using namespace dtsim;

TEST_SUITE("engine") {
  TEST_CASE("SharedBuffer: copies share data and the last one recycles it") {
    BufferPool pool(4);
    {
      SharedBuffer a = pool.acquire();
      a.data()[0] = 7.0f;
      SharedBuffer b = a;
      CHECK(b.view()[0] == 7.0f);
      CHECK(a.use_count() == 2);
      CHECK_THROWS_AS(a.data(), std::logic_error); // shared: read-only
    }
    CHECK(pool.buffers_allocated() == 1);
    SharedBuffer c = pool.acquire();
    SharedBuffer d = pool.acquire();
    CHECK(pool.buffers_allocated() == 2); // the first was reused, one more was needed
  }
}
