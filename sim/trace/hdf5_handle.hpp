// SPDX-License-Identifier: MIT
// Hdf5Handle: RAII owner of one HDF5 identifier, plus the error-stack helpers of sim/trace.
#pragma once

#include <cstdint>
#include <mutex>
#include <string>

namespace dtsim {

// Owns one HDF5 identifier (file, group, dataset, ...) and closes it once, with the close
// function of its kind. The id is stored as std::int64_t, which is hid_t in HDF5 >= 1.10
// (checked in the .cpp), so that this header does not carry hdf5.h to the users of the
// trace sink. Move-only; a default-constructed or closed handle holds a negative id.
class Hdf5Handle {
public:
  enum class Kind { File, Group, Dataset, Dataspace, Datatype, Attribute, PropertyList };

  Hdf5Handle() = default;
  Hdf5Handle(std::int64_t id, Kind kind) noexcept : id_(id), kind_(kind) {}
  ~Hdf5Handle() { close(); }
  Hdf5Handle(Hdf5Handle&& other) noexcept;
  Hdf5Handle& operator=(Hdf5Handle&& other) noexcept;
  Hdf5Handle(const Hdf5Handle&) = delete;
  Hdf5Handle& operator=(const Hdf5Handle&) = delete;

  std::int64_t get() const { return id_; }
  bool valid() const { return id_ >= 0; }
  // Closes now. Returns false if HDF5 reported an error; the handle is invalid either way.
  bool close() noexcept;

private:
  std::int64_t id_ = -1;
  Kind kind_ = Kind::File;
};

// Turns off HDF5's automatic printing of its error stack to stderr (process-wide; dtsim's
// HDF5 users are sim/trace and data/array_file). Errors are reported through exceptions
// instead. Idempotent.
void hdf5_silence_errors();

// Debian's libhdf5 is built without thread safety: every HDF5 call in dtsim runs under this
// one lock, so that runs of a sweep can write their traces from several threads.
std::recursive_mutex& hdf5_mutex();

// The innermost message of HDF5's current error stack (where the failure was detected), or
// "unknown HDF5 error". Call right after the failing HDF5 call, before any other.
std::string hdf5_last_error();

} // namespace dtsim
