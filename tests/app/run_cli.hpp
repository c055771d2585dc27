// SPDX-License-Identifier: MIT
// Runs the dtsim binary from a test and captures its exit code and output.
#pragma once

#include <array>
#include <cstdio>
#include <filesystem>
#include <fstream>
#include <string>
#include <sys/wait.h>
#include <unistd.h>

namespace dtsim::testing {

struct CliResult {
  int exit_code = -1;
  std::string output; // stdout and stderr
};

inline CliResult run_cli(const std::string& args) {
  const std::string cmd =
      std::string("cd '" DTSIM_SOURCE_DIR "' && '" DTSIM_BINARY "' ") + args + " 2>&1";
  CliResult r;
  FILE* pipe = popen(cmd.c_str(), "r");
  if (!pipe)
    return r;
  std::array<char, 4096> buf{};
  std::size_t n;
  while ((n = fread(buf.data(), 1, buf.size(), pipe)) > 0)
    r.output.append(buf.data(), n);
  const int status = pclose(pipe);
  r.exit_code = WIFEXITED(status) ? WEXITSTATUS(status) : -1;
  return r;
}

// One folder per test process (CTest runs the test cases in parallel): <tmp>/<prefix><pid>.
inline std::string process_temp_dir(const std::string& prefix) {
  const auto dir = std::filesystem::temp_directory_path() / (prefix + std::to_string(getpid()));
  std::filesystem::create_directories(dir);
  return dir.string();
}

// Writes `text` to <dir>/<name> and returns the path.
inline std::string write_temp_file(const std::string& dir, const std::string& name,
                                   const std::string& text) {
  const std::string path = dir + "/" + name;
  std::ofstream(path) << text;
  return path;
}

} // namespace dtsim::testing
