// SPDX-License-Identifier: MIT
// cuda-resident SwarmSGD's lattice quantizer per element against LatticeQuantizer's encode,
// decode and own_view given the same uniforms; no GPU needed.
#include "cuda/resident_math.hpp"
#include "resident_test_vectors.hpp"
#include "sim/core/rng.hpp"
#include "sim/optimizers/compression/lattice_quantizer.hpp"

#include <cmath>
#include <doctest/doctest.h>
#include <limits>
#include <vector>

using namespace dtsim;
using namespace dtsim::cuda;
using dtsim::test::random_vector;

namespace {

constexpr std::size_t kP = 4196;

// Equal bit for bit, NaN equal to NaN.
bool same(const std::vector<float>& a, const std::vector<float>& b) {
  if (a.size() != b.size())
    return false;
  for (std::size_t i = 0; i < a.size(); ++i)
    if (!(a[i] == b[i] || (std::isnan(a[i]) && std::isnan(b[i]))))
      return false;
  return true;
}

} // namespace

TEST_SUITE("cuda") {
  TEST_CASE("Resident math: the device's lattice steps are LatticeQuantizer's") {
    Rng rng = Rng::stream(41, "test", Rng::kNoNode);
    std::vector<float> x = random_vector(rng, kP);
    x[7] = 1e9f;                                    // clamped to the largest index
    x[8] = -1e9f;                                   // and the smallest
    x[9] = std::numeric_limits<float>::quiet_NaN(); // stays NaN, a decoding failure
    for (const int bits : {4, 8}) {
      for (const bool stochastic : {false, true}) {
        CAPTURE(bits);
        CAPTURE(stochastic);
        const double side = bits == 4 ? 2e-2 : 2e-3;
        LatticeQuantizer host(bits, side, stochastic);
        const LatticeCodec c = lattice_codec(bits, side, stochastic);
        Rng stream = Rng::stream(42, "test", Rng::kNoNode);
        Rng draws = stream; // the numbers encode() draws
        std::vector<float> wire_host(kP), u(kP, 0.0f);
        const EncodeStats st = host.encode(x, wire_host, stream);
        if (stochastic)
          fill_uniforms(draws, u);
        std::vector<float> wire(kP);
        double error_sq = 0;
        for (std::size_t e = 0; e < kP; ++e) {
          wire[e] = lattice_index(c, x[e], u[e]);
          const float d = wire[e] * c.side - x[e];
          error_sq += e == 9 ? 0.0 : static_cast<double>(d) * static_cast<double>(d);
        }
        CHECK(same(wire, wire_host));
        CHECK(wire[7] == kLatticeMaxIndex);
        CHECK(wire[8] == -kLatticeMaxIndex);
        CHECK(std::isnan(st.error_sq)); // the NaN coordinate, on both
        CHECK(error_sq > 0);
        // The sender's own view and a receiver's decoding against a nearby reference (most
        // coordinates right, the far ones wrong).
        std::vector<float> view_host(kP), view(kP);
        host.own_view(wire_host, x, view_host);
        for (std::size_t e = 0; e < kP; ++e)
          view[e] = wire[e] * c.side;
        CHECK(same(view, view_host));
        std::vector<float> ref = x;
        for (std::size_t e = 0; e < kP; e += 97)
          ref[e] += static_cast<float>(host.radius() * 3.0); // beyond q s / 2: fails
        std::vector<float> out_host(kP), out(kP);
        const std::int64_t failures_host = host.decode(wire_host, ref, out_host);
        std::int64_t failures = 0;
        for (std::size_t e = 0; e < kP; ++e) {
          bool failed = false;
          out[e] = lattice_decode(c, wire[e], ref[e], &failed);
          failures += failed ? 1 : 0;
        }
        CHECK(same(out, out_host));
        CHECK(failures == failures_host);
        CHECK(failures >= static_cast<std::int64_t>(kP / 97)); // the moved ones and the NaN
      }
    }
  }
}
