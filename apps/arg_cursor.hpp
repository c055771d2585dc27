// SPDX-License-Identifier: MIT
// Walking a command's arguments: option values, --set overrides and the one-line errors
// every dtsim command gives for them.
#pragma once

#include "sim/core/errors.hpp"

#include <stdexcept>
#include <string>
#include <vector>

namespace dtsim::cli {

// `text` as a whole number in [lo, hi], all of it ("2x", "1.5" and " 2" are refused).
// throws: ConfigError "<option>: expected an integer in [lo, hi], got '<text>'".
inline long long parse_whole_integer(const std::string& option, const std::string& text,
                                     long long lo, long long hi) {
  try {
    std::size_t used = 0;
    const long long x = std::stoll(text, &used);
    if (used == text.size() && !text.empty() && text.front() != ' ' && x >= lo && x <= hi)
      return x;
  } catch (const std::exception&) { // not a number, or out of long long's range
  }
  throw ConfigError(option + ": expected an integer in [" + std::to_string(lo) + ", " +
                    std::to_string(hi) + "], got '" + text + "'");
}

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

  // The value after the current option, which must not be empty (`-o ''` would silently mean
  // the default). throws: ConfigError "<option>: expected <what>, got ''".
  const std::string& path_value(const std::string& what) {
    const std::string option = arg();
    const std::string& v = value();
    if (v.empty())
      throw ConfigError(option + ": expected " + what + ", got ''");
    return v;
  }

  // The value after the current option as a whole number in [lo, hi] (all of it: "2x" and
  // "1.5" are refused). throws: ConfigError "<option>: expected an integer in [lo, hi], got '...'".
  long long integer_value(long long lo, long long hi) {
    const std::string option = arg();
    return parse_whole_integer(option, value(), lo, hi);
  }

  // The value after the current option as a number in [lo, hi], all of it.
  // throws: ConfigError "<option>: expected <what>, got '...'".
  double number_value(double lo, double hi, const std::string& what) {
    const std::string option = arg();
    const std::string& v = value();
    try {
      std::size_t used = 0;
      const double x = std::stod(v, &used);
      if (used == v.size() && x >= lo && x <= hi) // NaN fails both
        return x;
    } catch (const std::exception&) {
    }
    throw ConfigError(option + ": expected " + what + ", got '" + v + "'");
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
