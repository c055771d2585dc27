// SPDX-License-Identifier: MIT
// cuda-resident's refusal of a run whose resident vectors do not fit the device, and cuda's
// fallback to the host's vectors (no GPU needed: the device's memory is a number here).
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
          "or cuda-batched runs any number of nodes, their vectors on the host");
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

  TEST_CASE("Resident fit: cuda-resident refuses what does not fit, cuda keeps it on the host") {
    constexpr std::size_t kP = 235146;
    const std::size_t usable = std::size_t{81559} * 3 / 4 << 20;
    const auto fitting = static_cast<int>(usable / resident_bytes_per_node(kP));
    // No resident vectors asked for: none kept, nothing refused.
    CHECK(resident_nodes_kept(ResidentSize(), kP, usable, "H100") == 0);
    CHECK(resident_nodes_kept(ResidentSize(0, kResidentVectors, true), kP, usable, "H100") == 0);
    for (const bool required : {true, false}) {
      CAPTURE(required);
      CHECK(resident_nodes_kept(ResidentSize(1024, kResidentVectors, required), kP, usable,
                                "H100") == 1024);
      CHECK(resident_nodes_kept(ResidentSize(fitting, kResidentVectors, required), kP, usable,
                                "H100") == fitting);
    }
    // One node more: cuda-resident (required) refuses with the fit's line, cuda keeps none.
    CHECK_THROWS_WITH_AS(
        resident_nodes_kept(ResidentSize(fitting + 1), kP, usable, "H100"),
        doctest::Contains("backend cuda-resident keeps about 4 MiB per node on the device: "),
        std::runtime_error);
    CHECK(resident_nodes_kept(ResidentSize(fitting + 1, kResidentVectors, false), kP, usable,
                              "H100") == 0);
    // The vectors per node count: gradient tracking's nine fit fewer nodes.
    CHECK(resident_nodes_kept(ResidentSize(fitting, 9, false), kP, usable, "H100") == 0);
    CHECK_THROWS_AS(resident_nodes_kept(ResidentSize(fitting, 9, true), kP, usable, "H100"),
                    std::runtime_error);
  }
}
