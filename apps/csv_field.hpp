// SPDX-License-Identifier: MIT
// Writing one CSV field so that any text (a label with quotes, a folder with a comma) reads
// back as it was: RFC 4180 quoting, which Python's csv module and pandas read.
#pragma once

#include <string>

namespace dtsim::cli {

// `text` quoted, its quotes doubled, when it holds a comma, a quote or a line break, or always
// when `always_quoted` (columns whose readers look for "value" with its quotes).
inline std::string csv_field(const std::string& text, bool always_quoted = false) {
  if (!always_quoted && text.find_first_of(",\"\r\n") == std::string::npos)
    return text;
  std::string out = "\"";
  for (char c : text)
    out += c == '"' ? std::string("\"\"") : std::string(1, c);
  return out + '"';
}

} // namespace dtsim::cli
