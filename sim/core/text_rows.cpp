// SPDX-License-Identifier: MIT
#include "sim/core/text_rows.hpp"

#include <algorithm>
#include <cerrno>
#include <cmath>
#include <cstdlib>
#include <filesystem>
#include <fstream>

namespace dtsim {

std::optional<std::vector<TextRow>> read_text_rows(const std::string& path) {
  // A folder opens as a stream that reads nothing: it would look like an empty file.
  if (std::error_code ec; std::filesystem::is_directory(path, ec))
    return std::nullopt;
  std::ifstream in(path);
  if (!in)
    return std::nullopt;
  std::vector<TextRow> rows;
  std::string line;
  for (int number = 1; std::getline(in, line); ++number) {
    line.erase(std::min(line.find('#'), line.size()));
    line.erase(line.find_last_not_of(" \t\r") + 1); // npos + 1 == 0: all blank
    TextRow row{number, line, {}};
    std::size_t pos = 0;
    while ((pos = line.find_first_not_of(", \t\r", pos)) != std::string::npos) {
      const std::size_t end = line.find_first_of(", \t\r", pos);
      row.fields.push_back(line.substr(pos, end - pos));
      pos = end;
    }
    if (!row.fields.empty())
      rows.push_back(std::move(row));
  }
  return rows;
}

std::vector<std::vector<double>>
read_square_matrix(const std::string& path, const std::string& what,
                   const std::function<void(const std::string& message)>& fail) {
  const auto text = read_text_rows(path);
  if (!text)
    fail("cannot open " + path);
  std::vector<std::vector<double>> rows;
  for (const TextRow& r : *text) {
    std::vector<double> row;
    for (const std::string& cell : r.fields) {
      const auto x = parse_number(cell);
      if (!x || !std::isfinite(*x) || *x < 0)
        fail(path + ":" + std::to_string(r.line) + ": expected " + what + " >= 0, got '" + cell +
             "'");
      row.push_back(*x);
    }
    rows.push_back(std::move(row));
  }
  for (std::size_t r = 0; r < rows.size(); ++r)
    if (rows[r].size() != rows.size())
      fail(path + ":" + std::to_string((*text)[r].line) + ": row " + std::to_string(r + 1) +
           " has " + std::to_string(rows[r].size()) + " entries, expected " +
           std::to_string(rows.size()) + " (a square matrix)");
  return rows;
}

std::optional<double> parse_number(const std::string& field) {
  char* end = nullptr;
  const double x = std::strtod(field.c_str(), &end);
  if (field.empty() || *end != '\0')
    return std::nullopt;
  return x;
}

std::optional<long long> parse_integer(const std::string& field) {
  char* end = nullptr;
  errno = 0;
  const long long x = std::strtoll(field.c_str(), &end, 10);
  if (field.empty() || *end != '\0' || errno == ERANGE)
    return std::nullopt;
  return x;
}

} // namespace dtsim
