// SPDX-License-Identifier: MIT
// One shell word from any text: for the commands dtsim runs (plot.py) and the ones it prints
// for a user to paste (sweep --dry-run).
#pragma once

#include <string>

namespace dtsim::cli {

// `text` in single quotes, each ' inside written '\''.
inline std::string shell_quote(const std::string& text) {
  std::string q = "'";
  for (char c : text)
    q += c == '\'' ? std::string("'\\''") : std::string(1, c);
  return q + "'";
}

} // namespace dtsim::cli
