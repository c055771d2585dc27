// SPDX-License-Identifier: MIT
// Fuzzes the trace reader's handling of the trace schema: the input drives the building of a
// well-formed HDF5 file (groups, datasets of any rank, size and type, attributes of any type)
// that read_trace and read_events then read. Corrupting HDF5's own structures is fuzz_trace's
// job; HDF5 1.10 crashes on some of those, which keeps that target out of CI. This one reaches
// dtsim's own checks (missing parts, wrong ranks and types, sizes) and runs in CI.
#include "fuzz_input.hpp"
#include "sim/core/errors.hpp"
#include "sim/trace/hdf5_handle.hpp"
#include "sim/trace/hdf5_trace_sink.hpp"
#include "sim/trace/trace_reader.hpp"

#include <fuzzer/FuzzedDataProvider.h>
#include <hdf5.h>
#include <mutex>
#include <string>
#include <vector>

namespace {

using dtsim::Hdf5Handle;
using Kind = Hdf5Handle::Kind;

const char* const kNames[] = {
    "test_accuracy", "epoch",   "sim_time_s", "label_histogram", "histogram", "seed", "name",
    "status",        "version", "num_params", "updates",         "x",         "",     "events"};

std::string pick_name(FuzzedDataProvider& in) {
  if (in.ConsumeBool())
    return in.PickValueInArray(kNames);
  std::string name = in.ConsumeRandomLengthString(12);
  return name.empty() || name.find('/') != std::string::npos || name == "." ? "n" : name;
}

// A datatype the trace might hold, or one it should refuse.
Hdf5Handle pick_type(FuzzedDataProvider& in) {
  switch (in.ConsumeIntegralInRange(0, 6)) {
  case 0:
    return {H5Tcopy(H5T_NATIVE_DOUBLE), Kind::Datatype};
  case 1:
    return {H5Tcopy(H5T_NATIVE_INT64), Kind::Datatype};
  case 2:
    return {H5Tcopy(H5T_NATIVE_INT8), Kind::Datatype};
  case 3:
    return {H5Tcopy(H5T_NATIVE_FLOAT), Kind::Datatype};
  case 4: {
    Hdf5Handle t(H5Tcopy(H5T_C_S1), Kind::Datatype);
    H5Tset_size(t.get(), in.ConsumeBool() ? H5T_VARIABLE : in.ConsumeIntegralInRange(1, 64));
    return t;
  }
  case 5: { // a compound, as /events is
    Hdf5Handle t(H5Tcreate(H5T_COMPOUND, 16), Kind::Datatype);
    H5Tinsert(t.get(), in.ConsumeBool() ? "time_ns" : "a", 0, H5T_NATIVE_INT64);
    H5Tinsert(t.get(), in.ConsumeBool() ? "kind" : "b", 8, H5T_NATIVE_INT32);
    return t;
  }
  default: {
    const hsize_t dims[1] = {2};
    return {H5Tarray_create2(H5T_NATIVE_DOUBLE, 1, dims), Kind::Datatype};
  }
  }
}

// A dataspace of rank 0-3; mostly small, sometimes with a huge extent (no storage is written
// for those: the dataset is chunked and left unfilled).
std::vector<hsize_t> pick_dims(FuzzedDataProvider& in, bool& huge) {
  std::vector<hsize_t> dims(in.ConsumeIntegralInRange<std::size_t>(0, 3));
  huge = in.ConsumeIntegralInRange(0, 15) == 0;
  for (hsize_t& d : dims)
    d = huge ? in.ConsumeIntegralInRange<hsize_t>(1, hsize_t{1} << 40)
             : in.ConsumeIntegralInRange<hsize_t>(0, 6);
  return dims;
}

void add_attribute(FuzzedDataProvider& in, hid_t owner, const std::string& name) {
  if (H5Aexists(owner, name.c_str()) > 0)
    return;
  Hdf5Handle type = pick_type(in);
  bool huge = false;
  std::vector<hsize_t> dims = pick_dims(in, huge);
  if (huge)
    dims.assign(1, 3);
  Hdf5Handle space(dims.empty()
                       ? H5Screate(H5S_SCALAR)
                       : H5Screate_simple(static_cast<int>(dims.size()), dims.data(), nullptr),
                   Kind::Dataspace);
  Hdf5Handle attribute(
      H5Acreate2(owner, name.c_str(), type.get(), space.get(), H5P_DEFAULT, H5P_DEFAULT),
      Kind::Attribute);
  if (!attribute.valid())
    return;
  const hssize_t points = H5Sget_simple_extent_npoints(space.get());
  if (H5Tis_variable_str(type.get()) > 0) {
    std::vector<std::string> texts(static_cast<std::size_t>(points));
    std::vector<const char*> pointers;
    for (std::string& t : texts) {
      t = in.ConsumeRandomLengthString(16);
      pointers.push_back(t.c_str());
    }
    H5Awrite(attribute.get(), type.get(), pointers.data());
    return;
  }
  std::vector<unsigned char> bytes(static_cast<std::size_t>(points) * H5Tget_size(type.get()));
  for (unsigned char& b : bytes)
    b = in.ConsumeIntegral<unsigned char>();
  H5Awrite(attribute.get(), type.get(), bytes.data());
}

void add_dataset(FuzzedDataProvider& in, hid_t group, const std::string& name) {
  if (H5Lexists(group, name.c_str(), H5P_DEFAULT) > 0)
    return;
  Hdf5Handle type = pick_type(in);
  bool huge = false;
  const std::vector<hsize_t> dims = pick_dims(in, huge);
  Hdf5Handle space(dims.empty()
                       ? H5Screate(H5S_SCALAR)
                       : H5Screate_simple(static_cast<int>(dims.size()), dims.data(), nullptr),
                   Kind::Dataspace);
  Hdf5Handle create(H5Pcreate(H5P_DATASET_CREATE), Kind::PropertyList);
  if (huge) { // chunked, never written: a huge extent in a small file
    std::vector<hsize_t> chunk(dims.size(), 1);
    H5Pset_chunk(create.get(), static_cast<int>(chunk.size()), chunk.data());
  }
  Hdf5Handle set(H5Dcreate2(group, name.c_str(), type.get(), space.get(), H5P_DEFAULT, create.get(),
                            H5P_DEFAULT),
                 Kind::Dataset);
  if (!set.valid() || huge || H5Tis_variable_str(type.get()) > 0)
    return;
  const hssize_t points = H5Sget_simple_extent_npoints(space.get());
  std::vector<unsigned char> bytes(static_cast<std::size_t>(points) * H5Tget_size(type.get()));
  for (unsigned char& b : bytes)
    b = in.ConsumeIntegral<unsigned char>();
  if (!bytes.empty())
    H5Dwrite(set.get(), type.get(), H5S_ALL, H5S_ALL, H5P_DEFAULT, bytes.data());
}

void build_file(FuzzedDataProvider& in, const std::string& path) {
  Hdf5Handle file(H5Fcreate(path.c_str(), H5F_ACC_TRUNC, H5P_DEFAULT, H5P_DEFAULT), Kind::File);
  if (!file.valid())
    return;
  if (in.ConsumeIntegralInRange(0, 7) != 0) { // usually the right schema version
    const long long version = dtsim::Hdf5TraceSink::kSchemaVersion;
    Hdf5Handle space(H5Screate(H5S_SCALAR), Kind::Dataspace);
    Hdf5Handle attribute(H5Acreate2(file.get(), "schema_version", H5T_NATIVE_INT64, space.get(),
                                    H5P_DEFAULT, H5P_DEFAULT),
                         Kind::Attribute);
    H5Awrite(attribute.get(), H5T_NATIVE_LLONG, &version);
  }
  const int attributes = in.ConsumeIntegralInRange(0, 6);
  for (int a = 0; a < attributes; ++a)
    add_attribute(in, file.get(), pick_name(in));
  for (const char* group_name : {"metrics", "nodes", "epochs", "staleness"}) {
    if (in.ConsumeIntegralInRange(0, 4) == 0)
      continue;                                 // sometimes missing
    if (in.ConsumeIntegralInRange(0, 9) == 0) { // or a dataset where a group belongs
      add_dataset(in, file.get(), group_name);
      continue;
    }
    Hdf5Handle group(H5Gcreate2(file.get(), group_name, H5P_DEFAULT, H5P_DEFAULT, H5P_DEFAULT),
                     Kind::Group);
    const int sets = in.ConsumeIntegralInRange(0, 4);
    for (int s = 0; s < sets; ++s)
      add_dataset(in, group.get(), pick_name(in));
  }
  if (in.ConsumeBool())
    add_dataset(in, file.get(), "events");
}

} // namespace

extern "C" int LLVMFuzzerTestOneInput(const std::uint8_t* data, std::size_t size) {
  FuzzedDataProvider in(data, size);
  const std::string path = dtsim::fuzz::scratch_path("_schema.h5");
  {
    const std::lock_guard lock(dtsim::hdf5_mutex());
    dtsim::hdf5_silence_errors();
    build_file(in, path);
  }
  try {
    dtsim::read_trace(path);
  } catch (const dtsim::ConfigError&) {
  }
  try {
    dtsim::read_events(path);
  } catch (const dtsim::ConfigError&) {
  }
  return 0;
}
