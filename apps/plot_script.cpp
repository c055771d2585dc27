// SPDX-License-Identifier: MIT
// The search for analysis/plot.py.
#include "apps/plot_script.hpp"

#include "sim/core/errors.hpp"

#include <cstdlib>
#include <filesystem>
#include <system_error>

namespace dtsim::cli {

namespace fs = std::filesystem;

std::vector<std::string> plot_script_candidates() {
  if (const char* set = std::getenv("DTSIM_PLOT_PY"); set && *set)
    return {set};
  std::vector<std::string> out;
  std::error_code ec;
  if (const fs::path exe = fs::read_symlink("/proc/self/exe", ec); !ec)
    out.push_back(
        (exe.parent_path().parent_path() / DTSIM_INSTALL_DATADIR / "dtsim/analysis/plot.py")
            .lexically_normal()
            .string());
  out.push_back(DTSIM_SOURCE_DIR "/analysis/plot.py");
  out.push_back(DTSIM_INSTALL_FULL_DATADIR "/dtsim/analysis/plot.py");
  return out;
}

std::string plot_script() {
  const std::vector<std::string> candidates = plot_script_candidates();
  std::string looked;
  for (const std::string& c : candidates) {
    std::error_code ec;
    if (fs::is_regular_file(c, ec))
      return c;
    looked += (looked.empty() ? "" : ", ") + c;
  }
  throw ConfigError("report: analysis/plot.py not found (looked at " + looked +
                    "); set DTSIM_PLOT_PY to its path");
}

} // namespace dtsim::cli
