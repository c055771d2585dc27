// SPDX-License-Identifier: MIT
// .npz through libzip (stored or deflated members, ZIP64), HDF5 through its C API under
// dtsim's HDF5 lock (Debian's libhdf5 is not thread-safe), folders of .npy files directly.
#include "data/array_file.hpp"

#include "sim/trace/hdf5_handle.hpp"

#include <algorithm>
#include <filesystem>
#include <fstream>
#include <hdf5.h>
#include <memory>
#include <sstream>
#include <stdexcept>
#include <system_error>
#include <vector>
#include <zip.h>

namespace dtsim {
namespace {

[[noreturn]] void bad(const std::string& what) {
  throw std::runtime_error(what);
}

std::string join(const std::vector<std::string>& names) {
  std::string s;
  for (const auto& n : names)
    s += (s.empty() ? "" : ", ") + n;
  return s.empty() ? "nothing" : s;
}

NumericArray parse_named(const std::string& path, const std::string& name, std::string_view bytes) {
  try {
    return parse_npy(bytes);
  } catch (const std::runtime_error& e) {
    bad(path + ": " + name + ": " + e.what());
  }
}

NumericArray from_npy_folder(const std::string& folder, const std::string& name) {
  const std::filesystem::path file = std::filesystem::path(folder) / (name + ".npy");
  std::ifstream in(file, std::ios::binary);
  if (!in) {
    std::vector<std::string> found;
    std::error_code ec; // an unreadable folder lists nothing
    for (const auto& e : std::filesystem::directory_iterator(folder, ec))
      if (e.path().extension() == ".npy")
        found.push_back(e.path().stem().string());
    std::sort(found.begin(), found.end());
    bad(folder + ": no " + name + ".npy (the folder has .npy arrays: " + join(found) + ")");
  }
  std::ostringstream bytes;
  bytes << in.rdbuf();
  return parse_named(file.string(), name, bytes.str());
}

NumericArray from_npz(const std::string& path, const std::string& name) {
  int error = 0;
  const std::unique_ptr<zip_t, decltype(&zip_discard)> archive(
      zip_open(path.c_str(), ZIP_RDONLY, &error), &zip_discard);
  if (!archive) {
    zip_error_t z;
    zip_error_init_with_code(&z, error);
    const std::string why = zip_error_strerror(&z);
    zip_error_fini(&z);
    bad(path + ": cannot open as a .npz (zip) archive: " + why);
  }
  const std::string member = name + ".npy";
  const zip_int64_t index = zip_name_locate(archive.get(), member.c_str(), 0);
  if (index < 0) {
    std::vector<std::string> found;
    for (zip_int64_t i = 0; i < zip_get_num_entries(archive.get(), 0); ++i) {
      std::string n = zip_get_name(archive.get(), static_cast<zip_uint64_t>(i), 0);
      if (n.size() > 4 && n.ends_with(".npy"))
        found.push_back(n.substr(0, n.size() - 4));
    }
    bad(path + ": no array '" + name + "' (the archive holds: " + join(found) + ")");
  }
  zip_stat_t stat;
  if (zip_stat_index(archive.get(), static_cast<zip_uint64_t>(index), 0, &stat) != 0 ||
      !(stat.valid & ZIP_STAT_SIZE))
    bad(path + ": cannot read the size of " + member);
  const std::unique_ptr<zip_file_t, decltype(&zip_fclose)> file(
      zip_fopen_index(archive.get(), static_cast<zip_uint64_t>(index), 0), &zip_fclose);
  if (!file)
    bad(path + ": cannot open " + member + ": " + zip_strerror(archive.get()));
  // Deflate expands at most 1032:1, so a larger declared size is a corrupt header, refused
  // before anything is read.
  if ((stat.valid & ZIP_STAT_COMP_SIZE) && stat.size / 1032 > stat.comp_size + 1)
    bad(path + ": " + member + " declares " + std::to_string(stat.size) + " bytes from " +
        std::to_string(stat.comp_size) + " compressed: corrupt");
  // The declared sizes come from the archive and may lie (a compressed size larger than
  // the file passes the check above), so memory grows with the bytes actually inflated,
  // never with what the header claims.
  std::string bytes;
  constexpr zip_uint64_t chunk = zip_uint64_t{1} << 20;
  for (;;) {
    const std::size_t had = bytes.size();
    const zip_uint64_t want = std::min(chunk, stat.size - had + 1);
    bytes.resize(had + want);
    const zip_int64_t got = zip_fread(file.get(), bytes.data() + had, want);
    if (got < 0)
      bad(path + ": " + member + " is corrupt: " + zip_file_strerror(file.get()));
    bytes.resize(had + static_cast<std::size_t>(got));
    if (bytes.size() > stat.size || got == 0)
      break;
  }
  if (bytes.size() != stat.size)
    bad(path + ": " + member + " holds " + std::to_string(bytes.size()) + " bytes, its header " +
        "declares " + std::to_string(stat.size) + ": truncated or corrupt");
  return parse_named(path, name, bytes);
}

herr_t collect_name(hid_t, const char* name, const H5L_info_t*, void* out) {
  static_cast<std::vector<std::string>*>(out)->push_back(name);
  return 0;
}

NumericArray from_hdf5(const std::string& path, const std::string& name) {
  const std::lock_guard lock(hdf5_mutex());
  hdf5_silence_errors();
  const Hdf5Handle file(H5Fopen(path.c_str(), H5F_ACC_RDONLY, H5P_DEFAULT), Hdf5Handle::Kind::File);
  if (!file.valid())
    bad(path + ": cannot open as an HDF5 file: " + hdf5_last_error());
  if (H5Lexists(file.get(), name.c_str(), H5P_DEFAULT) <= 0) {
    std::vector<std::string> found;
    H5Literate(file.get(), H5_INDEX_NAME, H5_ITER_INC, nullptr, collect_name, &found);
    bad(path + ": no dataset '" + name + "' (the file's root holds: " + join(found) + ")");
  }
  const Hdf5Handle data(H5Dopen2(file.get(), name.c_str(), H5P_DEFAULT), Hdf5Handle::Kind::Dataset);
  if (!data.valid())
    bad(path + ": " + name + " is not a dataset: " + hdf5_last_error());
  const Hdf5Handle type(H5Dget_type(data.get()), Hdf5Handle::Kind::Datatype);
  const H5T_class_t cls = H5Tget_class(type.get());
  if (cls != H5T_INTEGER && cls != H5T_FLOAT)
    bad(path + ": " + name + " is not numeric (expected an integer or float dataset)");
  const Hdf5Handle space(H5Dget_space(data.get()), Hdf5Handle::Kind::Dataspace);
  const int rank = H5Sget_simple_extent_ndims(space.get());
  if (rank < 0)
    bad(path + ": " + name + ": " + hdf5_last_error());
  std::vector<hsize_t> dims(static_cast<std::size_t>(rank));
  H5Sget_simple_extent_dims(space.get(), dims.data(), nullptr);
  NumericArray a;
  std::size_t count = 1;
  for (hsize_t d : dims) {
    a.shape.push_back(static_cast<std::int64_t>(d));
    count *= d;
  }
  a.values.resize(count);
  if (count > 0 &&
      H5Dread(data.get(), H5T_NATIVE_FLOAT, H5S_ALL, H5S_ALL, H5P_DEFAULT, a.values.data()) < 0)
    bad(path + ": cannot read " + name + ": " + hdf5_last_error());
  return a;
}

} // namespace

NumericArray read_named_array(const std::string& path, const std::string& name) {
  std::error_code ec; // a path the OS refuses (e.g. a name too long) does not exist either
  if (std::filesystem::is_directory(path, ec))
    return from_npy_folder(path, name);
  if (!std::filesystem::exists(path, ec))
    bad(path + ": no such file or folder");
  const std::string ext = std::filesystem::path(path).extension().string();
  if (ext == ".npz")
    return from_npz(path, name);
  if (ext == ".h5" || ext == ".hdf5")
    return from_hdf5(path, name);
  bad(path + ": expected a .npz file, an HDF5 file (.h5, .hdf5) or a folder of .npy files");
}

} // namespace dtsim
