// SPDX-License-Identifier: MIT
// Small text data files (edge lists, compute-time traces, latency matrices): one record per
// line, fields separated by commas, spaces or tabs, '#' to the end of a line a comment.
#pragma once

#include <functional>
#include <optional>
#include <string>
#include <vector>

namespace dtsim {

// One line that holds something once its comment is removed.
struct TextRow {
  int line = 0;                    // 1-based line number in the file, for error messages
  std::string text;                // the line without its comment or trailing blanks
  std::vector<std::string> fields; // split at commas, spaces and tabs; never empty
};

// The non-blank rows of `path` in file order; nullopt when it cannot be opened (or is a folder).
std::optional<std::vector<TextRow>> read_text_rows(const std::string& path);

// A square matrix of finite numbers >= 0, one row per line (latency and mixing matrices):
// `what` names the entries in messages ("latencies in seconds"). Calls `fail` (which must
// throw) with one line naming the file and line: cannot open, a bad entry, a row of another
// length than the matrix has rows.
std::vector<std::vector<double>>
read_square_matrix(const std::string& path, const std::string& what,
                   const std::function<void(const std::string& message)>& fail);

// The whole field as a number (strtod syntax, so also inf and nan: callers check ranges) or
// as a decimal integer; nullopt when it is not one or something is left over.
std::optional<double> parse_number(const std::string& field);
std::optional<long long> parse_integer(const std::string& field);

} // namespace dtsim
