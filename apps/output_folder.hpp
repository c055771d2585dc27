// SPDX-License-Identifier: MIT
// Creating a command's output folder, with the one-line error a user can act on.
#pragma once

#include "sim/core/errors.hpp"

#include <filesystem>
#include <string>

namespace dtsim::cli {

// Creates `folder` and its parents if missing. throws: ConfigError "<option>: cannot create
// <folder>: <reason>" (a regular file in the way, no permission), not filesystem_error's text.
inline void make_output_folder(const std::filesystem::path& folder, const std::string& option) {
  std::error_code ec;
  if (!std::filesystem::create_directories(folder, ec) && ec)
    throw ConfigError(option + ": cannot create " + folder.string() + ": " + ec.message());
}

} // namespace dtsim::cli
