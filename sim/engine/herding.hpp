// SPDX-License-Identifier: MIT
// The parallel herding bound of an example order (docs/algorithms.md, section 7), in pieces.
#pragma once

#include <cstddef>
#include <cstdint>
#include <span>
#include <vector>

namespace dtsim {

// The executed sequence of a synchronous step: step t, then worker 0..n-1, each worker's
// examples [t*batch, (t+1)*batch) of its own order (shorter orders simply end earlier).
// Writes into `out` (resized to the total length).
void interleave_orders(std::span<const std::span<const std::uint32_t>> orders, int batch,
                       std::vector<std::uint32_t>& out);

// max_k || sum_{i<=k} (v_i - mean) ||_inf over `count` vectors of `dim` floats stored one
// after another (column-major dim x count), mean = their average. Accumulates in double.
// The reference form for tests and small problems; the simulator streams it (EpochProbe).
double herding_bound(std::span<const float> vectors, std::size_t dim, std::size_t count);

} // namespace dtsim
