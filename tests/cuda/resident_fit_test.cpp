// SPDX-License-Identifier: MIT
// cuda-resident's refusal of a run whose resident vectors do not fit the device (no GPU
// needed: the device's memory is a number here).
#include "cuda/resident_fit.hpp"

#include <doctest/doctest.h>

using namespace dtsim::cuda;

TEST_SUITE("cuda") {
  TEST_CASE("Resident fit: a run whose resident vectors exceed the usable memory is refused") {
    // The quickstart's MLP (235,146 parameters) on an 80 GB H100: three quarters of its
    // 81,559 MiB.
    constexpr std::size_t kP = 235146;
    const std::size_t usable = std::size_t{81559} * 3 / 4 << 20;
    CHECK(resident_bytes_per_node(kP) == 4702920);
    CHECK(resident_fit_error(1024, kP, usable, "H100").empty());
    CHECK(resident_fit_error(13000, kP, usable, "H100").empty());
    CHECK(resident_fit_error(20000, kP, usable, "H100") ==
          "backend cuda-resident keeps about 4 MiB per node on the device: 20000 nodes need 88 "
          "GiB, more than the 60 GiB (three quarters of H100's memory) it may use; backend cuda "
          "runs any number of nodes, in chunks");
    // The boundary: exactly what fits, and one node more.
    const auto fitting = static_cast<int>(usable / resident_bytes_per_node(kP));
    CHECK(resident_fit_error(fitting, kP, usable, "H100").empty());
    CHECK_FALSE(resident_fit_error(fitting + 1, kP, usable, "H100").empty());
    // An algorithm with rows of its own counts more vectors (gradient tracking: nine).
    CHECK(resident_bytes_per_node(kP, 9) == 9 * kP * sizeof(float));
    CHECK(resident_fit_error(fitting, kP, usable, "H100", 9)
              .rfind("backend cuda-resident keeps about 8 MiB per node on the device: ", 0) == 0);
    CHECK(resident_fit_error(fitting * 5 / 9, kP, usable, "H100", 9).empty());
  }
}
