// SPDX-License-Identifier: MIT
// Walking a command's arguments: option values, --set overrides and the one-line errors
// every dtsim command gives for them.
#pragma once

#include "sim/core/errors.hpp"

#include <string>
#include <vector>

namespace dtsim::cli {

// for (ArgCursor c("sweep", args); c.next();) { if (c.arg() == "--jobs") n = c.value(); ... }
class ArgCursor {
public:
  ArgCursor(std::string command, const std::vector<std::string>& args)
      : command_(std::move(command)), args_(args) {}

  // Moves to the next argument; false after the last.
  bool next() { return ++i_ < args_.size(); }
  const std::string& arg() const { return args_[i_]; }
  bool is_option() const { return !arg().empty() && arg()[0] == '-'; }

  // The argument after the current option, which it consumes.
  // throws: ConfigError "<option>: expected a value after it".
  const std::string& value() {
    if (i_ + 1 >= args_.size())
      throw ConfigError(arg() + ": expected a value after it");
    return args_[++i_];
  }

  // "--set key=value" or "--set=key=value": appends the assignment, returns true.
  bool take_set(std::vector<std::string>& overrides) {
    if (arg() == "--set") {
      overrides.push_back(value());
      return true;
    }
    if (arg().rfind("--set=", 0) == 0) {
      overrides.push_back(arg().substr(6));
      return true;
    }
    return false;
  }

  [[noreturn]] void unknown_option() const {
    throw ConfigError(command_ + ": unknown option '" + arg() + "' (see dtsim " + command_ +
                      " --help)");
  }

private:
  std::string command_;
  const std::vector<std::string>& args_;
  std::size_t i_ = static_cast<std::size_t>(-1);
};

} // namespace dtsim::cli
