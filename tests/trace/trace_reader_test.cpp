// SPDX-License-Identifier: MIT
// read_trace: files that are not dtsim traces are ConfigErrors that name the file and why.
#include "sim/core/errors.hpp"
#include "sim/trace/hdf5_trace_sink.hpp"
#include "sim/trace/trace_reader.hpp"
#include "trace_fixtures.hpp"

#include <doctest/doctest.h>
#include <filesystem>
#include <fstream>
#include <hdf5.h>

using namespace dtsim;
using namespace dtsim::test;
namespace fs = std::filesystem;

namespace {

std::string read_error(const std::string& path) {
  try {
    read_trace(path);
  } catch (const ConfigError& e) {
    return e.what();
  }
  return "";
}

// An HDF5 file written without dtsim: one dataset, optionally a schema_version attribute.
void write_foreign_hdf5(const std::string& path, int schema_version) {
  const hid_t file = H5Fcreate(path.c_str(), H5F_ACC_TRUNC, H5P_DEFAULT, H5P_DEFAULT);
  REQUIRE(file >= 0);
  const hsize_t n = 4;
  const double data[4] = {1, 2, 3, 4};
  const hid_t space = H5Screate_simple(1, &n, nullptr);
  const hid_t set =
      H5Dcreate2(file, "x", H5T_IEEE_F64LE, space, H5P_DEFAULT, H5P_DEFAULT, H5P_DEFAULT);
  H5Dwrite(set, H5T_NATIVE_DOUBLE, H5S_ALL, H5S_ALL, H5P_DEFAULT, data);
  if (schema_version > 0) {
    const hid_t scalar = H5Screate(H5S_SCALAR);
    const hid_t attribute =
        H5Acreate2(file, "schema_version", H5T_STD_I32LE, scalar, H5P_DEFAULT, H5P_DEFAULT);
    H5Awrite(attribute, H5T_NATIVE_INT, &schema_version);
    H5Aclose(attribute);
    H5Sclose(scalar);
  }
  H5Dclose(set);
  H5Sclose(space);
  REQUIRE(H5Fclose(file) >= 0);
}

} // namespace

TEST_SUITE("trace") {
  TEST_CASE("read_trace: files that are not dtsim traces are ConfigErrors") {
    TempDir dir("reader");
    SUBCASE("missing file") {
      const std::string path = dir.file("missing.h5");
      CHECK(read_error(path) == path + ": not a dtsim trace (no such file)");
    }
    SUBCASE("a directory") {
      CHECK(read_error(dir.path.string()) ==
            dir.path.string() + ": not a dtsim trace (not a regular file)");
    }
    SUBCASE("text file") {
      const std::string path = dir.file("notes.h5");
      { std::ofstream(path) << "sim_time_s,test_accuracy\n0,0.1\n"; }
      CHECK(read_error(path) == path + ": not a dtsim trace (not an HDF5 file)");
      CHECK_THROWS_AS(read_events(path), ConfigError);
    }
    SUBCASE("empty file") {
      const std::string path = dir.file("empty.h5");
      { std::ofstream out(path); }
      CHECK(read_error(path) == path + ": not a dtsim trace (not an HDF5 file)");
    }
    SUBCASE("HDF5 file from another program") {
      const std::string path = dir.file("foreign.h5");
      write_foreign_hdf5(path, 0);
      CHECK(read_error(path) == path + ": not a dtsim trace (no schema_version attribute)");
    }
    SUBCASE("another schema version") {
      const std::string path = dir.file("future.h5");
      write_foreign_hdf5(path, 2);
      CHECK(read_error(path) ==
            path + ": not a dtsim trace (schema_version 2, this dtsim reads 1)");
    }
    SUBCASE("truncated trace") {
      const std::string path = dir.file("run.h5");
      {
        Hdf5TraceSink sink(path, EventLevel::Full);
        sink.begin(sample_header());
        for (int i = 0; i < 3; ++i)
          sink.metrics(sample_row(i), sample_wall(i));
        sink.finish(sample_summary(RunStatus::Completed));
      }
      fs::resize_file(path, fs::file_size(path) / 2);
      const std::string message = read_error(path);
      CHECK(message.rfind(path + ": not a dtsim trace (", 0) == 0);
    }
  }

  TEST_CASE("read_trace: a trace with schema_version 1 but missing groups is rejected") {
    TempDir dir("groups");
    const std::string path = dir.file("partial_layout.h5");
    write_foreign_hdf5(path, 1);
    const std::string message = read_error(path);
    CHECK(message.rfind(path + ": not a dtsim trace (metrics", 0) == 0);
  }

  TEST_CASE("read_trace: a column declaring more values than the file stores is refused") {
    // Found by fuzz_trace_schema: a chunked dataset that was never written can declare 10^12
    // values in a small file; the reader allocated a buffer of that size.
    TempDir dir("extent");
    const std::string path = dir.file("huge.h5");
    write_foreign_hdf5(path, 1);
    {
      const hid_t file = H5Fopen(path.c_str(), H5F_ACC_RDWR, H5P_DEFAULT);
      const hid_t group = H5Gcreate2(file, "metrics", H5P_DEFAULT, H5P_DEFAULT, H5P_DEFAULT);
      const hsize_t n = hsize_t{1} << 40, chunk = 1;
      const hid_t space = H5Screate_simple(1, &n, nullptr);
      const hid_t create = H5Pcreate(H5P_DATASET_CREATE);
      H5Pset_chunk(create, 1, &chunk);
      const hid_t set = H5Dcreate2(group, "test_accuracy", H5T_IEEE_F64LE, space, H5P_DEFAULT,
                                   create, H5P_DEFAULT);
      H5Dclose(set);
      H5Pclose(create);
      H5Sclose(space);
      H5Gclose(group);
      REQUIRE(H5Fclose(file) >= 0);
    }
    CHECK(read_error(path) == path + ": not a dtsim trace (metrics/test_accuracy declares " +
                                  "1099511627776 values but the file stores 0 bytes of it)");
  }

  TEST_CASE("Hdf5Handle: the sink and the reader leave no HDF5 identifier open") {
    TempDir dir("leaks");
    const std::string path = dir.file("run.h5");
    {
      Hdf5TraceSink sink(path, EventLevel::Full);
      sink.begin(sample_header());
      sink.event(sample_event(0));
      sink.metrics(sample_row(0), sample_wall(0));
      sink.finish(sample_summary(RunStatus::Completed));
    }
    {
      Hdf5TraceSink killed(dir.file("killed.h5"), EventLevel::Full);
      killed.begin(sample_header());
      killed.metrics(sample_row(0), sample_wall(0));
    }
    CHECK(read_trace(path).num_events == 1);
    CHECK(read_events(dir.file("killed.h5.partial")).empty());
    write_foreign_hdf5(dir.file("foreign.h5"), 1);
    CHECK_THROWS_AS(read_trace(dir.file("foreign.h5")), ConfigError);
    CHECK(H5Fget_obj_count(H5F_OBJ_ALL, H5F_OBJ_ALL) == 0);
  }
}
