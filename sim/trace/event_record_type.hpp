// SPDX-License-Identifier: MIT
// The HDF5 compound types of an EventRecord: in memory, and packed on disk.
#pragma once

#include "sim/trace/hdf5_handle.hpp"

namespace dtsim {

// Fields time_ns, kind, node, peer, staleness, bytes at their offsets in EventRecord. HDF5
// converts by field name between this and the packed little-endian type stored on disk.
// throws: std::runtime_error if HDF5 cannot build the type.
Hdf5Handle event_record_memory_type();

// The same fields packed little-endian (36 bytes), as stored in /events on every host.
// throws: std::runtime_error if HDF5 cannot build the type.
Hdf5Handle event_record_file_type();

} // namespace dtsim
