// SPDX-License-Identifier: MIT
// Error types shared by every module, and the always-on internal assertion.
#pragma once

#include <stdexcept>
#include <string>

namespace dtsim {

// Bad user input (scenario, command line, data files). The message is one line that names
// the file, line and key where known, and what was expected. Caught once, in main: exit 2.
class ConfigError : public std::runtime_error {
public:
  using std::runtime_error::runtime_error;
};

[[noreturn]] void assertion_failed(const char* cond, const char* file, int line,
                                   const std::string& msg);

} // namespace dtsim

// Internal invariant: always checked, also in release builds (cheap conditions only).
#define DTSIM_ASSERT(cond, msg)                                                                    \
  do {                                                                                             \
    if (!(cond))                                                                                   \
      ::dtsim::assertion_failed(#cond, __FILE__, __LINE__, (msg));                                 \
  } while (false)
