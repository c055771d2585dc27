// SPDX-License-Identifier: MIT
// The message of the ConfigError a callable throws, for tests of error texts.
#pragma once

#include "sim/core/errors.hpp"

#include <string>

namespace dtsim::testing {

// The ConfigError message, or "(no error)" when `f` returns normally.
template <class F> std::string config_error_of(F&& f) {
  try {
    f();
  } catch (const ConfigError& e) {
    return e.what();
  }
  return "(no error)";
}

} // namespace dtsim::testing
