// SPDX-License-Identifier: MIT
// Hdf5Handle: closing by kind, and access to HDF5's error stack.
#include "sim/trace/hdf5_handle.hpp"

#include <algorithm>
#include <hdf5.h>
#include <mutex>
#include <type_traits>
#include <utility>

namespace dtsim {

static_assert(std::is_same_v<hid_t, std::int64_t>, "Hdf5Handle stores hid_t as std::int64_t");

Hdf5Handle::Hdf5Handle(Hdf5Handle&& other) noexcept
    : id_(std::exchange(other.id_, -1)), kind_(other.kind_) {}

Hdf5Handle& Hdf5Handle::operator=(Hdf5Handle&& other) noexcept {
  if (this != &other) {
    close();
    id_ = std::exchange(other.id_, -1);
    kind_ = other.kind_;
  }
  return *this;
}

std::recursive_mutex& hdf5_mutex() {
  static std::recursive_mutex m;
  return m;
}

bool Hdf5Handle::close() noexcept {
  const std::lock_guard lock(hdf5_mutex());
  if (id_ < 0)
    return true;
  herr_t rc = -1;
  switch (kind_) {
  case Kind::File:
    rc = H5Fclose(id_);
    break;
  case Kind::Group:
    rc = H5Gclose(id_);
    break;
  case Kind::Dataset:
    rc = H5Dclose(id_);
    break;
  case Kind::Dataspace:
    rc = H5Sclose(id_);
    break;
  case Kind::Datatype:
    rc = H5Tclose(id_);
    break;
  case Kind::Attribute:
    rc = H5Aclose(id_);
    break;
  case Kind::PropertyList:
    rc = H5Pclose(id_);
    break;
  }
  id_ = -1;
  return rc >= 0;
}

void hdf5_silence_errors() {
  const std::lock_guard lock(hdf5_mutex());
  static std::once_flag once;
  std::call_once(once, [] {
    // No HDF5 exit handler: files are closed explicitly, and after a failed write (a full
    // disk) the library's own clean-up at exit crashed closing the file again (SIGSEGV in
    // H5F__close_cb), turning a one-line error into a core dump. Must precede any other call.
    H5dont_atexit();
    H5Eset_auto2(H5E_DEFAULT, nullptr, nullptr);
  });
}

namespace {
herr_t keep_innermost(unsigned n, const H5E_error2_t* err, void* out) {
  // Walking upward, entry 0 is the function that detected the error: the most specific text.
  if (n == 0 && err->desc != nullptr)
    *static_cast<std::string*>(out) = err->desc;
  return 0;
}
} // namespace

std::string hdf5_last_error() {
  std::string text;
  H5Ewalk2(H5E_DEFAULT, H5E_WALK_UPWARD, keep_innermost, &text);
  if (text.empty())
    return "unknown HDF5 error";
  // Errors are one line: some descriptions (a failed write's) embed a ctime() newline.
  std::replace(text.begin(), text.end(), '\n', ' ');
  return text;
}

} // namespace dtsim
