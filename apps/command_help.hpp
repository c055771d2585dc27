// SPDX-License-Identifier: MIT
// `dtsim COMMAND --help`: each command's usage and options, one line each.
#pragma once

#include <string>

namespace dtsim::cli {

// The help text of `command`, or empty when there is no such command.
std::string command_help(const std::string& command);

} // namespace dtsim::cli
