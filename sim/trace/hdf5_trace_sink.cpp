// SPDX-License-Identifier: MIT
// Hdf5TraceSink: HDF5 C API calls that write the trace schema of docs/trace-schema.md.
#include "sim/trace/hdf5_trace_sink.hpp"

#include "sim/core/errors.hpp"
#include "sim/trace/event_record_type.hpp"

#include <array>
#include <cerrno>
#include <chrono>
#include <cstddef>
#include <cstdio>
#include <ctime>
#include <fcntl.h>
#include <filesystem>
#include <hdf5.h>
#include <span>
#include <stdexcept>
#include <sys/stat.h>
#include <system_error>
#include <unistd.h>
#include <utility>

namespace dtsim {

namespace {

using Kind = Hdf5Handle::Kind;

// Root attributes owned by the sink; header and summary attributes may not reuse them.
constexpr std::array<const char*, 10> kReservedAttributes = {
    "schema_version", "name",       "scenario",     "seed",   "status",
    "status_message", "start_time", "wall_seconds", "events", "warnings"};

bool is_reserved(const std::string& name) {
  for (const char* r : kReservedAttributes)
    if (name == r)
      return true;
  return false;
}

// HDF5 link names: non-empty, no '/', not "." (the group itself).
bool valid_link_name(const std::string& name) {
  return !name.empty() && name != "." && name.find('/') == std::string::npos;
}

// Failures after the file exists are runtime errors (disk full, I/O), not bad user input.
[[noreturn]] void fail(const std::string& path, const std::string& what) {
  throw std::runtime_error("trace " + path + ": " + what + ": " + hdf5_last_error());
}

hid_t check_id(hid_t id, const std::string& path, const std::string& what) {
  if (id < 0)
    fail(path, what);
  return id;
}

void check(herr_t rc, const std::string& path, const std::string& what) {
  if (rc < 0)
    fail(path, what);
}

std::string iso8601_utc_now() {
  const std::time_t now = std::chrono::system_clock::to_time_t(std::chrono::system_clock::now());
  std::tm utc{};
  gmtime_r(&now, &utc);
  char text[32];
  std::strftime(text, sizeof text, "%Y-%m-%dT%H:%M:%SZ", &utc);
  return text;
}

Hdf5Handle text_type(const std::string& path) {
  Hdf5Handle type(check_id(H5Tcopy(H5T_C_S1), path, "string type"), Kind::Datatype);
  check(H5Tset_size(type.get(), H5T_VARIABLE), path, "string type");
  check(H5Tset_cset(type.get(), H5T_CSET_UTF8), path, "string type");
  return type;
}

// Creates or overwrites a scalar attribute; an existing one of another type class is replaced.
void set_attribute(hid_t object, const std::string& name, hid_t file_type, hid_t memory_type,
                   const void* value, const std::string& path) {
  const std::string what = "attribute " + name;
  Hdf5Handle attribute;
  if (H5Aexists(object, name.c_str()) > 0) {
    attribute = Hdf5Handle(check_id(H5Aopen(object, name.c_str(), H5P_DEFAULT), path, what),
                           Kind::Attribute);
    Hdf5Handle stored(check_id(H5Aget_type(attribute.get()), path, what), Kind::Datatype);
    if (H5Tget_class(stored.get()) != H5Tget_class(file_type)) {
      attribute.close();
      check(H5Adelete(object, name.c_str()), path, what);
    }
  }
  if (!attribute.valid()) {
    Hdf5Handle space(check_id(H5Screate(H5S_SCALAR), path, what), Kind::Dataspace);
    attribute = Hdf5Handle(
        check_id(H5Acreate2(object, name.c_str(), file_type, space.get(), H5P_DEFAULT, H5P_DEFAULT),
                 path, what),
        Kind::Attribute);
  }
  check(H5Awrite(attribute.get(), memory_type, value), path, what);
}

void set_text(hid_t object, const std::string& name, const std::string& value,
              const std::string& path) {
  const Hdf5Handle type = text_type(path);
  const char* data = value.c_str();
  set_attribute(object, name, type.get(), type.get(), &data, path);
}

void set_number(hid_t object, const std::string& name, double value, const std::string& path) {
  set_attribute(object, name, H5T_IEEE_F64LE, H5T_NATIVE_DOUBLE, &value, path);
}

Hdf5Handle create_group(hid_t parent, const char* name, const std::string& path) {
  return Hdf5Handle(
      check_id(H5Gcreate2(parent, name, H5P_DEFAULT, H5P_DEFAULT, H5P_DEFAULT), path, name),
      Kind::Group);
}

// A fixed-size dataset written at once (per-node columns, histograms).
void write_fixed(hid_t parent, const std::string& name, hid_t file_type, hid_t memory_type,
                 std::span<const hsize_t> dims, const void* data, const std::string& path) {
  const std::string what = "dataset " + name;
  Hdf5Handle space(
      check_id(H5Screate_simple(static_cast<int>(dims.size()), dims.data(), nullptr), path, what),
      Kind::Dataspace);
  Hdf5Handle set(check_id(H5Dcreate2(parent, name.c_str(), file_type, space.get(), H5P_DEFAULT,
                                     H5P_DEFAULT, H5P_DEFAULT),
                          path, what),
                 Kind::Dataset);
  hsize_t total = 1;
  for (hsize_t d : dims)
    total *= d;
  if (total > 0)
    check(H5Dwrite(set.get(), memory_type, H5S_ALL, H5S_ALL, H5P_DEFAULT, data), path, what);
}

// Whether an extendible dataset is compressed. Metrics and epoch rows are not: a compressed
// chunk is rewritten (often elsewhere in the file) each time a row is added, and a run killed
// while the flush writes it left /metrics chunks that no longer inflated (found by
// tests/app/crash_test.cpp); an uncompressed chunk keeps its place and its earlier rows. They
// are small (8 bytes per value). The event log, large and written in blocks, is compressed.
enum class Compression { none, deflate };

// An empty 1-D dataset that grows by appends: chunked and, with Compression::deflate,
// byte-shuffled (which makes integer and slowly varying columns compress several times
// better) and deflate-compressed.
Hdf5Handle create_extendible(hid_t parent, const std::string& name, hid_t file_type,
                             hsize_t chunk_rows, Compression compression, const std::string& path) {
  const std::string what = "dataset " + name;
  const hsize_t initial = 0;
  const hsize_t unlimited = H5S_UNLIMITED;
  Hdf5Handle space(check_id(H5Screate_simple(1, &initial, &unlimited), path, what),
                   Kind::Dataspace);
  Hdf5Handle create(check_id(H5Pcreate(H5P_DATASET_CREATE), path, what), Kind::PropertyList);
  check(H5Pset_chunk(create.get(), 1, &chunk_rows), path, what);
  if (compression == Compression::deflate) {
    check(H5Pset_shuffle(create.get()), path, what);
    check(H5Pset_deflate(create.get(), 4), path, what);
  }
  return Hdf5Handle(check_id(H5Dcreate2(parent, name.c_str(), file_type, space.get(), H5P_DEFAULT,
                                        create.get(), H5P_DEFAULT),
                             path, what),
                    Kind::Dataset);
}

// Appends `count` elements (laid out as `memory_space` describes) after `old_size` elements.
void append(hid_t set, hsize_t old_size, hsize_t count, hid_t memory_type, hid_t memory_space,
            const void* data, const std::string& path) {
  const hsize_t new_size = old_size + count;
  check(H5Dset_extent(set, &new_size), path, "extend dataset");
  Hdf5Handle space(check_id(H5Dget_space(set), path, "dataset space"), Kind::Dataspace);
  check(H5Sselect_hyperslab(space.get(), H5S_SELECT_SET, &old_size, nullptr, &count, nullptr), path,
        "select rows");
  check(H5Dwrite(set, memory_type, memory_space, space.get(), H5P_DEFAULT, data), path,
        "append rows");
}

} // namespace

Hdf5TraceSink::Hdf5TraceSink(std::string final_path, EventLevel events)
    : final_path_(std::move(final_path)), partial_path_(final_path_ + ".partial"),
      work_path_(final_path_ + ".work"), events_(events) {
  hdf5_silence_errors();
}

Hdf5TraceSink::~Hdf5TraceSink() {
  const std::lock_guard lock(hdf5_mutex());
  if (file_.valid() && !finished_) {
    // Best effort: keep the buffered events in the .partial. A destructor must not throw, and
    // the .partial is already readable up to the last checkpoint.
    try {
      flush_events();
      check(H5Fflush(file_.get(), H5F_SCOPE_GLOBAL), partial_path_, "flush");
      checkpoint(true);
    } catch (...) {
    }
  }
  close_all();
  if (begun_ && !finished_) {
    std::error_code ec;
    std::filesystem::remove(work_path_, ec);
  }
  release_work_lock();
}

void Hdf5TraceSink::begin(const RunHeader& header) {
  const std::lock_guard lock(hdf5_mutex());
  DTSIM_ASSERT(!begun_, "Hdf5TraceSink::begin() called twice");
  namespace fs = std::filesystem;
  if (final_path_.empty())
    throw ConfigError("output.path: expected a trace file name, got ''");
  std::error_code is_folder;
  if (fs::is_directory(final_path_, is_folder))
    throw ConfigError("output.path: " + final_path_ +
                      " is a folder; expected a trace file name (e.g. " +
                      (fs::path(final_path_) / "run.h5").string() + ")");
  const fs::path partial(partial_path_);
  if (partial.has_parent_path()) {
    std::error_code ec;
    fs::create_directories(partial.parent_path(), ec);
    if (ec)
      throw ConfigError("output.path: cannot create " + partial.parent_path().string() + ": " +
                        ec.message());
  }
  // The work file is opened and locked before anything is truncated or removed: a second run
  // given the same path (a scenario launched twice, a sweep started again over a running one)
  // must stop here, not empty the first run's work file and delete its checkpoint. The lock
  // is held until the trace is finished. HDF5's own locking is off for this file (it would
  // lock only after H5Fcreate had truncated it); HDF5_USE_FILE_LOCKING may turn it back on,
  // which is harmless: its flock() and our open-file-description lock do not conflict.
  work_lock_fd_ = open_locked_work_file();
  if (::ftruncate(work_lock_fd_, 0) != 0)
    throw std::runtime_error("trace " + work_path_ +
                             ": cannot truncate: " + std::generic_category().message(errno));
  // A .partial left by an earlier run of this trace is not this run's: until the first
  // checkpoint there is none.
  std::error_code stale;
  fs::remove(partial_path_, stale);
  const Hdf5Handle access(check_id(H5Pcreate(H5P_FILE_ACCESS), work_path_, "file access list"),
                          Kind::PropertyList);
  check(H5Pset_file_locking(access.get(), false, true), work_path_, "file locking");
  const hid_t file = H5Fcreate(work_path_.c_str(), H5F_ACC_TRUNC, H5P_DEFAULT, access.get());
  if (file < 0) {
    const std::string why = hdf5_last_error();
    fs::remove(work_path_, stale); // ours: created and locked above
    release_work_lock();
    throw ConfigError("output.path: cannot create " + work_path_ + ": " + why);
  }
  file_ = Hdf5Handle(file, Kind::File);
  begun_ = true;
  const std::string& path = partial_path_;

  const int version = kSchemaVersion;
  set_attribute(file, "schema_version", H5T_STD_I32LE, H5T_NATIVE_INT, &version, path);
  set_text(file, "name", header.name, path);
  set_text(file, "scenario", header.scenario_yaml, path);
  set_attribute(file, "seed", H5T_STD_U64LE, H5T_NATIVE_UINT64, &header.seed, path);
  set_text(file, "status", to_string(RunStatus::Running), path);
  set_text(file, "status_message", "", path);
  set_text(file, "start_time", iso8601_utc_now(), path);
  set_number(file, "wall_seconds", 0.0, path);
  set_text(file, "events", to_string(events_), path);
  for (const auto& [key, value] : header.text_attributes) {
    DTSIM_ASSERT(!is_reserved(key), "text attribute '" + key + "' is reserved by the trace");
    set_text(file, key, value, path);
  }
  for (const auto& [key, value] : header.number_attributes) {
    DTSIM_ASSERT(!is_reserved(key), "number attribute '" + key + "' is reserved by the trace");
    set_number(file, key, value, path);
  }

  create_group(file, "metrics", path);
  const Hdf5Handle nodes = create_group(file, "nodes", path);
  create_group(file, "staleness", path);
  const auto& labels = header.label_histogram;
  if (!labels.empty() && !labels.front().empty()) {
    std::vector<std::int64_t> flat;
    flat.reserve(labels.size() * labels.front().size());
    for (const auto& row : labels) {
      DTSIM_ASSERT(row.size() == labels.front().size(), "label_histogram rows differ in length");
      flat.insert(flat.end(), row.begin(), row.end());
    }
    const std::array<hsize_t, 2> dims = {labels.size(), labels.front().size()};
    write_fixed(nodes.get(), "label_histogram", H5T_STD_I64LE, H5T_NATIVE_INT64, dims, flat.data(),
                path);
  }

  const hsize_t one = 1;
  scalar_space_ =
      Hdf5Handle(check_id(H5Screate_simple(1, &one, nullptr), path, "space"), Kind::Dataspace);

  if (events_ == EventLevel::Full) {
    const Hdf5Handle stored = event_record_file_type();
    event_set_ =
        create_extendible(file, "events", stored.get(), kEventBlock, Compression::deflate, path);
    event_memory_type_ = event_record_memory_type();
    event_buffer_.reserve(kEventBlock);
  }
  // Readable even if the run dies before its first evaluation.
  check(H5Fflush(file, H5F_SCOPE_GLOBAL), path, "flush");
  checkpoint(true);
}

void Hdf5TraceSink::create_metric_sets(const MetricsRow& row) {
  const std::string& path = partial_path_;
  Hdf5Handle group(check_id(H5Gopen2(file_.get(), "metrics", H5P_DEFAULT), path, "/metrics"),
                   Kind::Group);
  // Checked in full before anything is kept, so that a rejected first row leaves no trace.
  std::vector<std::string> names;
  names.reserve(row.columns.size());
  for (const auto& [name, value] : row.columns) {
    DTSIM_ASSERT(valid_link_name(name), "metrics column name '" + name + "' is not a valid name");
    DTSIM_ASSERT(name != "wall_time_s", "metrics column wall_time_s is written by the trace");
    for (const std::string& seen : names)
      DTSIM_ASSERT(seen != name, "metrics column '" + name + "' appears twice");
    names.push_back(name);
  }
  column_names_ = std::move(names);
  column_sets_.reserve(column_names_.size() + 1);
  for (const std::string& name : column_names_)
    column_sets_.push_back(create_extendible(group.get(), name, H5T_IEEE_F64LE, kMetricsChunkRows,
                                             Compression::none, path));
  column_sets_.push_back(create_extendible(group.get(), "wall_time_s", H5T_IEEE_F64LE,
                                           kMetricsChunkRows, Compression::none, path));
}

void Hdf5TraceSink::metrics(const MetricsRow& row, double wall_seconds) {
  const std::lock_guard lock(hdf5_mutex());
  DTSIM_ASSERT(begun_ && !finished_, "Hdf5TraceSink::metrics() outside begin()..finish()");
  if (rows_ == 0) {
    create_metric_sets(row);
  } else {
    DTSIM_ASSERT(row.columns.size() == column_names_.size(),
                 "metrics row has " + std::to_string(row.columns.size()) +
                     " columns, the first row had " + std::to_string(column_names_.size()));
    for (std::size_t i = 0; i < column_names_.size(); ++i)
      DTSIM_ASSERT(row.columns[i].first == column_names_[i],
                   "metrics column " + std::to_string(i) + " is '" + row.columns[i].first +
                       "', the first row had '" + column_names_[i] + "'");
  }
  const std::string& path = partial_path_;
  for (std::size_t i = 0; i < column_names_.size(); ++i)
    append(column_sets_[i].get(), rows_, 1, H5T_NATIVE_DOUBLE, scalar_space_.get(),
           &row.columns[i].second, path);
  append(column_sets_.back().get(), rows_, 1, H5T_NATIVE_DOUBLE, scalar_space_.get(), &wall_seconds,
         path);
  ++rows_;
  flush_events();
  set_number(file_.get(), "wall_seconds", wall_seconds, path);
  check(H5Fflush(file_.get(), H5F_SCOPE_GLOBAL), path, "flush");
  checkpoint(false);
}

void Hdf5TraceSink::epoch(const MetricsRow& row) {
  const std::lock_guard lock(hdf5_mutex());
  DTSIM_ASSERT(begun_ && !finished_, "Hdf5TraceSink::epoch() outside begin()..finish()");
  const std::string& path = partial_path_;
  if (epoch_rows_ == 0) {
    const Hdf5Handle group = create_group(file_.get(), "epochs", path);
    for (const auto& [name, value] : row.columns) {
      DTSIM_ASSERT(valid_link_name(name), "epoch column name '" + name + "' is not a valid name");
      for (const std::string& seen : epoch_names_)
        DTSIM_ASSERT(seen != name, "epoch column '" + name + "' appears twice");
      epoch_names_.push_back(name);
      epoch_sets_.push_back(create_extendible(group.get(), name, H5T_IEEE_F64LE, kMetricsChunkRows,
                                              Compression::none, path));
    }
  }
  DTSIM_ASSERT(row.columns.size() == epoch_names_.size(),
               "epoch row has another number of columns than the first row");
  for (std::size_t i = 0; i < epoch_names_.size(); ++i) {
    DTSIM_ASSERT(row.columns[i].first == epoch_names_[i], "epoch column '" + row.columns[i].first +
                                                              "' where the first row had '" +
                                                              epoch_names_[i] + "'");
    append(epoch_sets_[i].get(), epoch_rows_, 1, H5T_NATIVE_DOUBLE, scalar_space_.get(),
           &row.columns[i].second, path);
  }
  ++epoch_rows_;
  check(H5Fflush(file_.get(), H5F_SCOPE_GLOBAL), path, "flush");
  checkpoint(false);
}

void Hdf5TraceSink::event(const EventRecord& record) {
  if (events_ != EventLevel::Full)
    return;
  DTSIM_ASSERT(begun_ && !finished_, "Hdf5TraceSink::event() outside begin()..finish()");
  event_buffer_.push_back(record);
  if (event_buffer_.size() >= kEventBlock)
    flush_events();
}

void Hdf5TraceSink::flush_events() {
  const std::lock_guard lock(hdf5_mutex());
  if (event_buffer_.empty())
    return;
  const std::string& path = partial_path_;
  const hsize_t count = event_buffer_.size();
  Hdf5Handle memory_space(check_id(H5Screate_simple(1, &count, nullptr), path, "event space"),
                          Kind::Dataspace);
  append(event_set_.get(), events_written_, count, event_memory_type_.get(), memory_space.get(),
         event_buffer_.data(), path);
  events_written_ += count;
  event_buffer_.clear(); // keeps the capacity: no allocation for the next block
}

void Hdf5TraceSink::finish(const RunSummary& summary) {
  const std::lock_guard lock(hdf5_mutex());
  DTSIM_ASSERT(begun_ && !finished_, "Hdf5TraceSink::finish() without begin() or twice");
  DTSIM_ASSERT(summary.status != RunStatus::Running, "finish() needs the final status");
  const std::string& path = partial_path_;
  const hid_t file = file_.get();
  flush_events();

  Hdf5Handle nodes(check_id(H5Gopen2(file, "nodes", H5P_DEFAULT), path, "/nodes"), Kind::Group);
  for (const auto& [name, values] : summary.node_columns) {
    DTSIM_ASSERT(valid_link_name(name) && name != "label_histogram",
                 "node column name '" + name + "' is not allowed");
    DTSIM_ASSERT(values.size() == summary.node_columns.front().second.size(),
                 "node column '" + name + "' has a different length");
    const std::array<hsize_t, 1> dims = {values.size()};
    write_fixed(nodes.get(), name, H5T_IEEE_F64LE, H5T_NATIVE_DOUBLE, dims, values.data(), path);
  }
  Hdf5Handle staleness(check_id(H5Gopen2(file, "staleness", H5P_DEFAULT), path, "/staleness"),
                       Kind::Group);
  const std::array<hsize_t, 1> bins = {summary.staleness_histogram.size()};
  write_fixed(staleness.get(), "histogram", H5T_STD_I64LE, H5T_NATIVE_INT64, bins,
              summary.staleness_histogram.data(), path);

  for (const auto& [key, value] : summary.number_attributes) {
    DTSIM_ASSERT(!is_reserved(key), "number attribute '" + key + "' is reserved by the trace");
    set_number(file, key, value, path);
  }
  set_text(file, "status", to_string(summary.status), path);
  set_text(file, "status_message", summary.message, path);
  std::string warnings;
  for (const std::string& w : summary.warnings)
    warnings += (warnings.empty() ? "" : "\n") + w;
  set_text(file, "warnings", warnings, path);
  set_number(file, "wall_seconds", summary.wall_seconds, path);

  nodes.close();
  staleness.close();
  // The file is closed (and its close checked) before the rename, so the final name only ever
  // points at a complete file.
  finished_ = true;
  column_sets_.clear();
  event_set_.close();
  event_memory_type_.close();
  scalar_space_.close();
  if (!file_.close())
    fail(path, "close");
  std::error_code ec;
  std::filesystem::rename(work_path_, final_path_, ec);
  if (ec)
    throw std::runtime_error("trace " + work_path_ + ": cannot rename to " + final_path_ + ": " +
                             ec.message());
  std::filesystem::remove(partial_path_, ec);
  release_work_lock();
}

int Hdf5TraceSink::open_locked_work_file() const {
  // A run that finishes renames its work file to the trace: the file this run opened may be
  // that one by the time its lock is granted, so the lock counts only if the path still
  // names the locked file (else truncating it would empty a finished trace).
  for (int attempt = 0; attempt < 8; ++attempt) {
    const int fd = ::open(work_path_.c_str(), O_RDWR | O_CREAT | O_CLOEXEC, 0644);
    if (fd < 0) // open() names the reason (permission, no space) more plainly than HDF5
      throw ConfigError("output.path: cannot create " + work_path_ +
                        " (the file a run writes before it becomes " +
                        std::filesystem::path(final_path_).filename().string() +
                        "): " + std::generic_category().message(errno));
    struct flock whole {};
    whole.l_type = F_WRLCK;
    whole.l_whence = SEEK_SET;
    if (::fcntl(fd, F_OFD_SETLK, &whole) != 0) {
      const int err = errno;
      if (err == EAGAIN || err == EACCES) {
        ::close(fd);
        throw std::runtime_error("trace " + final_path_ + ": another run is writing it now (" +
                                 work_path_ + " is locked); give this run another output path");
      }
      return fd; // a file system without locks (ENOLCK, EINVAL): go on, as HDF5 itself would
    }
    struct stat opened {
    }, named{};
    if (::fstat(fd, &opened) == 0 && ::stat(work_path_.c_str(), &named) == 0 &&
        opened.st_dev == named.st_dev && opened.st_ino == named.st_ino)
      return fd;
    ::close(fd);
  }
  throw std::runtime_error("trace " + work_path_ +
                           ": replaced repeatedly while opening it; is another run writing it?");
}

void Hdf5TraceSink::release_work_lock() noexcept {
  if (work_lock_fd_ >= 0)
    ::close(work_lock_fd_); // closing the last descriptor releases the flock
  work_lock_fd_ = -1;
}

// HDF5 does not write a flush atomically: a process killed while H5Fflush wrote the file
// left metadata pointing past the end of the file or at chunks not yet written (found by
// tests/app/crash_test.cpp). So the run writes <trace>.work, and after each flush, when the
// work file is complete on disk, a copy of it replaces <trace>.partial by rename(), which is
// atomic: a kill at any moment leaves the last complete .partial. Copies are taken at every
// checkpoint while the file is small (a study's trace without an event log is tens of kB)
// and at most once per second beyond that, which bounds their cost for large event logs.
void Hdf5TraceSink::checkpoint(bool force) {
  namespace fs = std::filesystem;
  const auto now = std::chrono::steady_clock::now();
  std::error_code ec;
  const auto size = fs::file_size(work_path_, ec);
  if (!force && !ec && size > kCheckpointEveryFlushBytes &&
      now - last_checkpoint_ < std::chrono::seconds(1))
    return;
  const std::string tmp = partial_path_ + ".tmp";
  fs::copy_file(work_path_, tmp, fs::copy_options::overwrite_existing, ec);
  if (!ec)
    fs::rename(tmp, partial_path_, ec);
  if (ec)
    throw std::runtime_error("trace " + partial_path_ +
                             ": cannot write the checkpoint: " + ec.message());
  last_checkpoint_ = now;
}

void Hdf5TraceSink::close_all() noexcept {
  column_sets_.clear();
  event_set_.close();
  event_memory_type_.close();
  scalar_space_.close();
  file_.close();
}

} // namespace dtsim
