// SPDX-License-Identifier: MIT
// event_record_{memory,file}_type: EventRecord's fields as HDF5 compound types.
#include "sim/trace/event_record_type.hpp"

#include "sim/engine/trace_sink.hpp"

#include <cstddef>
#include <hdf5.h>
#include <stdexcept>

namespace dtsim {

Hdf5Handle event_record_memory_type() {
  Hdf5Handle type(H5Tcreate(H5T_COMPOUND, sizeof(EventRecord)), Hdf5Handle::Kind::Datatype);
  const hid_t t = type.get();
  const bool ok =
      t >= 0 && H5Tinsert(t, "time_ns", offsetof(EventRecord, time_ns), H5T_NATIVE_INT64) >= 0 &&
      H5Tinsert(t, "kind", offsetof(EventRecord, kind), H5T_NATIVE_INT32) >= 0 &&
      H5Tinsert(t, "node", offsetof(EventRecord, node), H5T_NATIVE_INT32) >= 0 &&
      H5Tinsert(t, "peer", offsetof(EventRecord, peer), H5T_NATIVE_INT32) >= 0 &&
      H5Tinsert(t, "staleness", offsetof(EventRecord, staleness), H5T_NATIVE_INT64) >= 0 &&
      H5Tinsert(t, "bytes", offsetof(EventRecord, bytes), H5T_NATIVE_INT64) >= 0 &&
      H5Tinsert(t, "wait_ns", offsetof(EventRecord, wait_ns), H5T_NATIVE_INT64) >= 0 &&
      H5Tinsert(t, "held", offsetof(EventRecord, held), H5T_NATIVE_INT32) >= 0;
  if (!ok)
    throw std::runtime_error("trace: cannot build the HDF5 event type: " + hdf5_last_error());
  return type;
}

Hdf5Handle event_record_file_type() {
  Hdf5Handle type(H5Tcreate(H5T_COMPOUND, 48), Hdf5Handle::Kind::Datatype);
  const hid_t t = type.get();
  const bool ok = t >= 0 && H5Tinsert(t, "time_ns", 0, H5T_STD_I64LE) >= 0 &&
                  H5Tinsert(t, "kind", 8, H5T_STD_I32LE) >= 0 &&
                  H5Tinsert(t, "node", 12, H5T_STD_I32LE) >= 0 &&
                  H5Tinsert(t, "peer", 16, H5T_STD_I32LE) >= 0 &&
                  H5Tinsert(t, "staleness", 20, H5T_STD_I64LE) >= 0 &&
                  H5Tinsert(t, "bytes", 28, H5T_STD_I64LE) >= 0 &&
                  H5Tinsert(t, "wait_ns", 36, H5T_STD_I64LE) >= 0 &&
                  H5Tinsert(t, "held", 44, H5T_STD_I32LE) >= 0;
  if (!ok)
    throw std::runtime_error("trace: cannot build the HDF5 event type: " + hdf5_last_error());
  return type;
}

} // namespace dtsim
