// SPDX-License-Identifier: MIT
// read_trace / read_events: HDF5 C API reads of the trace schema, with ConfigError on bad files.
#include "sim/trace/trace_reader.hpp"

#include "sim/core/errors.hpp"
#include "sim/trace/event_record_type.hpp"
#include "sim/trace/hdf5_handle.hpp"
#include "sim/trace/hdf5_trace_sink.hpp"

#include <cstddef>
#include <filesystem>
#include <hdf5.h>
#include <system_error>

namespace dtsim {

namespace {

using Kind = Hdf5Handle::Kind;

// Every failure names the file and why it is not (or no longer) a readable trace.
class Reader {
public:
  explicit Reader(const std::string& path) : path_(path) {}

  [[noreturn]] void bad(const std::string& why) const {
    throw ConfigError(path_ + ": not a dtsim trace (" + why + ")");
  }
  hid_t must(hid_t id, const std::string& what) const {
    if (id < 0)
      bad(what + ": " + hdf5_last_error());
    return id;
  }
  void must(herr_t rc, const std::string& what) const {
    if (rc < 0)
      bad(what + ": " + hdf5_last_error());
  }

  Hdf5Handle open() const {
    hdf5_silence_errors();
    std::error_code ec;
    if (!std::filesystem::is_regular_file(path_, ec))
      bad(std::filesystem::exists(path_, ec) ? "not a regular file" : "no such file");
    const htri_t is_hdf5 = H5Fis_hdf5(path_.c_str());
    if (is_hdf5 == 0)
      bad("not an HDF5 file");
    must(static_cast<herr_t>(is_hdf5), "cannot read");
    Hdf5Handle file(must(H5Fopen(path_.c_str(), H5F_ACC_RDONLY, H5P_DEFAULT), "cannot open"),
                    Kind::File);
    if (H5Aexists(file.get(), "schema_version") <= 0)
      bad("no schema_version attribute");
    Hdf5Handle attribute(must(H5Aopen(file.get(), "schema_version", H5P_DEFAULT), "schema_version"),
                         Kind::Attribute);
    long long version = 0;
    must(H5Aread(attribute.get(), H5T_NATIVE_LLONG, &version), "schema_version");
    if (version != Hdf5TraceSink::kSchemaVersion)
      bad("schema_version " + std::to_string(version) + ", this dtsim reads " +
          std::to_string(Hdf5TraceSink::kSchemaVersion));
    return file;
  }

  std::string read_text(hid_t attribute, hid_t type, const std::string& what) const {
    if (H5Tis_variable_str(type) > 0) {
      Hdf5Handle memory(must(H5Tcopy(H5T_C_S1), what), Kind::Datatype);
      must(H5Tset_size(memory.get(), H5T_VARIABLE), what);
      must(H5Tset_cset(memory.get(), H5Tget_cset(type)), what);
      char* data = nullptr;
      must(H5Aread(attribute, memory.get(), &data), what);
      std::string text = data != nullptr ? data : "";
      H5free_memory(data);
      return text;
    }
    std::string text(H5Tget_size(type), '\0');
    must(H5Aread(attribute, type, text.data()), what);
    return text.substr(0, text.find('\0')); // fixed-length strings are NUL-padded
  }

  // Scalar string, integer and float attributes; others (arrays, compounds) are skipped.
  void read_attributes(hid_t file, TraceContents& out) const {
    std::vector<std::string> names;
    must(H5Aiterate2(file, H5_INDEX_NAME, H5_ITER_INC, nullptr, collect_attribute, &names),
         "attributes");
    for (const std::string& name : names) {
      const std::string what = "attribute " + name;
      Hdf5Handle attribute(must(H5Aopen(file, name.c_str(), H5P_DEFAULT), what), Kind::Attribute);
      Hdf5Handle space(must(H5Aget_space(attribute.get()), what), Kind::Dataspace);
      if (H5Sget_simple_extent_npoints(space.get()) != 1)
        continue;
      Hdf5Handle type(must(H5Aget_type(attribute.get()), what), Kind::Datatype);
      const H5T_class_t type_class = H5Tget_class(type.get());
      if (type_class == H5T_STRING) {
        out.text_attributes[name] = read_text(attribute.get(), type.get(), what);
      } else if (type_class == H5T_INTEGER && name == "seed") {
        must(H5Aread(attribute.get(), H5T_NATIVE_UINT64, &out.seed), what);
        out.number_attributes[name] = static_cast<double>(out.seed);
      } else if (type_class == H5T_INTEGER || type_class == H5T_FLOAT) {
        double value = 0.0;
        must(H5Aread(attribute.get(), H5T_NATIVE_DOUBLE, &value), what);
        out.number_attributes[name] = value;
      }
    }
  }

  // The datasets directly in `group` (absent group: none), read as rank-1 float64.
  std::map<std::string, std::vector<double>> read_columns(hid_t file, const char* group_name,
                                                          const char* skip) const {
    std::map<std::string, std::vector<double>> columns;
    Hdf5Handle group(must(H5Gopen2(file, group_name, H5P_DEFAULT), group_name), Kind::Group);
    std::vector<std::string> names;
    must(H5Literate(group.get(), H5_INDEX_NAME, H5_ITER_INC, nullptr, collect_link, &names),
         group_name);
    for (const std::string& name : names) {
      if (name == skip)
        continue;
      const std::string what = std::string(group_name) + "/" + name;
      Hdf5Handle set(must(H5Dopen2(group.get(), name.c_str(), H5P_DEFAULT), what), Kind::Dataset);
      columns[name] = read_vector<double>(set.get(), H5T_NATIVE_DOUBLE, what);
    }
    return columns;
  }

  // A dataset's extent is only a declaration: a chunked dataset never written can declare
  // 10^12 values in a file of a few kilobytes. Before a buffer of `count` values is allocated,
  // the file must hold storage that could inflate to them (deflate expands at most 1032:1; a
  // small read is allowed without storage, e.g. an unwritten fill-value dataset).
  void check_storage(hid_t set, hsize_t count, std::size_t value_bytes,
                     const std::string& what) const {
    constexpr double kSmall = 1 << 20;
    const double wanted = static_cast<double>(count) * static_cast<double>(value_bytes);
    const double stored = static_cast<double>(H5Dget_storage_size(set));
    if (wanted > kSmall && wanted > 1032.0 * stored)
      bad(what + " declares " + std::to_string(count) + " values but the file stores " +
          std::to_string(static_cast<long long>(stored)) + " bytes of it");
  }

  template <class T>
  std::vector<T> read_vector(hid_t set, hid_t memory_type, const std::string& what) const {
    Hdf5Handle space(must(H5Dget_space(set), what), Kind::Dataspace);
    if (H5Sget_simple_extent_ndims(space.get()) != 1)
      bad(what + " is not one-dimensional");
    hsize_t size = 0;
    must(H5Sget_simple_extent_dims(space.get(), &size, nullptr), what);
    check_storage(set, size, sizeof(T), what);
    std::vector<T> values(size);
    if (size > 0)
      must(H5Dread(set, memory_type, H5S_ALL, H5S_ALL, H5P_DEFAULT, values.data()), what);
    return values;
  }

  std::vector<std::vector<std::int64_t>> read_matrix(hid_t set, const std::string& what) const {
    Hdf5Handle space(must(H5Dget_space(set), what), Kind::Dataspace);
    if (H5Sget_simple_extent_ndims(space.get()) != 2)
      bad(what + " is not two-dimensional");
    hsize_t dims[2] = {0, 0};
    must(H5Sget_simple_extent_dims(space.get(), dims, nullptr), what);
    hsize_t count = 0;
    if (__builtin_mul_overflow(dims[0], dims[1], &count))
      bad(what + " declares more values than memory can address");
    check_storage(set, count, sizeof(std::int64_t), what);
    std::vector<std::int64_t> flat(count);
    if (!flat.empty())
      must(H5Dread(set, H5T_NATIVE_INT64, H5S_ALL, H5S_ALL, H5P_DEFAULT, flat.data()), what);
    std::vector<std::vector<std::int64_t>> rows(dims[0]);
    for (hsize_t r = 0; r < dims[0]; ++r)
      rows[r].assign(flat.begin() + static_cast<std::ptrdiff_t>(r * dims[1]),
                     flat.begin() + static_cast<std::ptrdiff_t>((r + 1) * dims[1]));
    return rows;
  }

  bool has_link(hid_t file, const char* name) const {
    return H5Lexists(file, name, H5P_DEFAULT) > 0;
  }

private:
  static herr_t collect_attribute(hid_t, const char* name, const H5A_info_t*, void* out) {
    static_cast<std::vector<std::string>*>(out)->emplace_back(name);
    return 0;
  }
  static herr_t collect_link(hid_t, const char* name, const H5L_info_t*, void* out) {
    static_cast<std::vector<std::string>*>(out)->emplace_back(name);
    return 0;
  }

  std::string path_;
};

} // namespace

TraceContents read_trace_attributes(const std::string& path) {
  const std::lock_guard lock(hdf5_mutex());
  const Reader reader(path);
  const Hdf5Handle file = reader.open();
  TraceContents out;
  reader.read_attributes(file.get(), out);
  return out;
}

TraceContents read_trace(const std::string& path) {
  const std::lock_guard lock(hdf5_mutex());
  const Reader reader(path);
  const Hdf5Handle file = reader.open();
  const hid_t f = file.get();
  TraceContents out;
  reader.read_attributes(f, out);
  out.metrics = reader.read_columns(f, "metrics", "");
  if (reader.has_link(f, "epochs"))
    out.epochs = reader.read_columns(f, "epochs", "");
  out.nodes = reader.read_columns(f, "nodes", "label_histogram");
  if (reader.has_link(f, "nodes/label_histogram")) {
    Hdf5Handle set(reader.must(H5Dopen2(f, "nodes/label_histogram", H5P_DEFAULT), "labels"),
                   Kind::Dataset);
    out.label_histogram = reader.read_matrix(set.get(), "nodes/label_histogram");
  }
  // Missing after a kill: written by finish().
  if (reader.has_link(f, "staleness") && reader.has_link(f, "staleness/histogram")) {
    Hdf5Handle set(
        reader.must(H5Dopen2(f, "staleness/histogram", H5P_DEFAULT), "staleness/histogram"),
        Kind::Dataset);
    out.staleness_histogram =
        reader.read_vector<std::int64_t>(set.get(), H5T_NATIVE_INT64, "staleness/histogram");
  }
  if (reader.has_link(f, "events")) {
    Hdf5Handle set(reader.must(H5Dopen2(f, "events", H5P_DEFAULT), "events"), Kind::Dataset);
    Hdf5Handle space(reader.must(H5Dget_space(set.get()), "events"), Kind::Dataspace);
    const hssize_t count = H5Sget_simple_extent_npoints(space.get());
    if (count < 0)
      reader.bad("events: " + hdf5_last_error());
    out.num_events = static_cast<std::size_t>(count);
  }
  return out;
}

std::vector<EventRecord> read_events(const std::string& path) {
  const std::lock_guard lock(hdf5_mutex());
  const Reader reader(path);
  const Hdf5Handle file = reader.open();
  if (!reader.has_link(file.get(), "events"))
    return {};
  Hdf5Handle set(reader.must(H5Dopen2(file.get(), "events", H5P_DEFAULT), "events"), Kind::Dataset);
  // Fields are matched by name, so the packed on-disk record converts to the padded struct.
  const Hdf5Handle memory = event_record_memory_type();
  return reader.read_vector<EventRecord>(set.get(), memory.get(), "events");
}

} // namespace dtsim
