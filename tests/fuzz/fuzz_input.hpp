// SPDX-License-Identifier: MIT
// The fuzz targets' shared plumbing: readers that take a path get the input as a file.
#pragma once

#include <cstddef>
#include <cstdint>
#include <filesystem>
#include <fstream>
#include <set>
#include <string>
#include <unistd.h>

namespace dtsim::fuzz {

// A path for this process's files, `suffix` naming which: in /dev/shm when it is writable
// (a tmpfs, so that writing every input costs no disk I/O: on a disk the file-based targets
// spent most of their time waiting), else /tmp. Removed when the process exits normally
// (libFuzzer's fork mode starts many processes).
inline std::string scratch_path(const std::string& suffix) {
  struct Registry {
    std::set<std::string> paths;
    ~Registry() {
      for (const std::string& p : paths) {
        std::error_code ignored;
        std::filesystem::remove_all(p, ignored);
      }
    }
  };
  static Registry registry;
  static const std::string dir = access("/dev/shm", W_OK) == 0 ? "/dev/shm" : "/tmp";
  std::string path = dir + "/dtsim_fuzz_" + std::to_string(getpid()) + suffix;
  registry.paths.insert(path);
  return path;
}

// Writes the input to one file per process (overwritten by every input) and returns its path.
inline std::string input_file(const std::uint8_t* data, std::size_t size, const char* suffix) {
  const std::string path = scratch_path(suffix);
  std::ofstream(path, std::ios::binary | std::ios::trunc)
      .write(reinterpret_cast<const char*>(data), static_cast<std::streamsize>(size));
  return path;
}

} // namespace dtsim::fuzz
