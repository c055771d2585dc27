// SPDX-License-Identifier: MIT
// Out-of-line failure path of DTSIM_ASSERT.
#include "sim/core/errors.hpp"

namespace dtsim {

void assertion_failed(const char* cond, const char* file, int line, const std::string& msg) {
  throw std::logic_error(std::string("internal error: ") + file + ":" + std::to_string(line) +
                         ": " + cond + ": " + msg);
}

} // namespace dtsim
