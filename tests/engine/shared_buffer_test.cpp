// SPDX-License-Identifier: MIT
// BufferPool / SharedBuffer: sharing, recycling, write protection after sharing, handles that
// outlive their pool.
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

  TEST_CASE("SharedBuffer: handles keep their storage after the pool is gone") {
    // An algorithm may outlive the simulator whose pool made its buffers: the handles still
    // read them, and the last one frees the storage (the sanitizer build checks both).
    SharedBuffer kept, copy;
    {
      BufferPool pool(3);
      kept = pool.acquire();
      kept.data()[2] = 5.0f;
      SharedBuffer other = pool.acquire(); // in use when the pool goes, freed after it
      pool = BufferPool(1); // a moved-in pool lets go of the old storage, as the pool's end
      CHECK(pool.acquire().view().size() == 1);
    }
    copy = kept;
    CHECK(copy.view()[2] == 5.0f);
    CHECK(copy.id() == kept.id());
    CHECK(kept.use_count() == 2);
    kept = SharedBuffer();
    CHECK(copy.use_count() == 1);
    CHECK(copy.view().size() == 3);
  }
}
