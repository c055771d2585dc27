// SPDX-License-Identifier: MIT
// Measures one core's streaming memory bandwidth, the yardstick for the algorithms' vector
// math (a few flops per parameter, bandwidth-bound once the nodes' vectors exceed the caches).
#pragma once

#include <cstddef>

namespace dtsim {

// Bytes per second that one thread moves through a[i] = b[i] + s * c[i] over three float
// arrays of `working_set_bytes` in all (best of several passes): two reads, the write, and
// the read for ownership that a write to a line not in cache costs, i.e. 16 bytes per element.
double measure_stream_bandwidth(std::size_t working_set_bytes);

} // namespace dtsim
