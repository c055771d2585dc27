// SPDX-License-Identifier: MIT
// Params: the read-only view through which every component reads its configuration keys.
#pragma once

#include "sim/core/param_tree.hpp"
#include "sim/core/sim_time.hpp"

#include <cstdint>
#include <limits>
#include <memory>
#include <optional>
#include <string>
#include <string_view>
#include <vector>

namespace dtsim {

// Allowed interval for a number; open or closed at each end.
struct Range {
  double lo = -std::numeric_limits<double>::infinity();
  double hi = std::numeric_limits<double>::infinity();
  bool lo_open = false;
  bool hi_open = false;
  static Range positive() { return {0.0, std::numeric_limits<double>::infinity(), true, false}; }
  static Range non_negative() { return {0.0, std::numeric_limits<double>::infinity()}; }
  static Range unit() { return {0.0, 1.0}; }                      // [0, 1]
  static Range unit_open_hi() { return {0.0, 1.0, false, true}; } // [0, 1)
  static Range at_least(double lo) { return {lo, std::numeric_limits<double>::infinity()}; }
  static Range between(double lo, double hi) { return {lo, hi}; }
  // A span of simulated time a key may give: [0, 1e9] s, so that the run's clock (which ends
  // at 9.2e9 s) never overflows; `positive` excludes 0.
  static Range seconds(bool positive = false) {
    return {0.0, SimTime::kMaxKeySeconds, positive, false};
  }
  bool contains(double x) const;
  std::string describe() const;
};

// What a key holds, as `dtsim schema` describes it (see key_log.hpp).
enum class KeyType { number, integer, flag, text, file, choice, numbers, map, maps };

// A view onto one map of a configuration tree, e.g. the `algorithm:` section.
// Reading a key marks it used and, when absent, writes the default into the tree, so that
// after construction the tree is the fully resolved configuration. Keys never read are
// reported by `reject_unused()` with "did you mean". Errors are ConfigError with
// "file:line: path.key: expected ..., got ...".
class Params {
public:
  Params(std::shared_ptr<ParamNode> root, std::string file);
  // An empty view (no file), for components built in code and tests.
  Params();

  bool has(std::string_view key) const;

  double number(std::string_view key, double def, Range r = {}) const;
  double number(std::string_view key, Range r = {}) const; // required
  std::int64_t integer(std::string_view key, std::int64_t def, Range r = {}) const;
  std::int64_t integer(std::string_view key, Range r = {}) const; // required
  bool flag(std::string_view key, bool def) const;
  std::string text(std::string_view key, const std::string& def) const;
  std::string text(std::string_view key) const; // required
  // A file or folder name. A relative one written in the scenario file resolves against
  // that file's folder (like a sweep's `base:`); one from --set or a default stays relative
  // to the current directory.
  std::string file_path(std::string_view key, const std::string& def) const;
  std::string file_path(std::string_view key) const; // required
  // One of `allowed`; otherwise an error listing them, with "did you mean".
  std::string choice(std::string_view key, const std::string& def,
                     const std::vector<std::string>& allowed) const;
  std::vector<double> numbers(std::string_view key, const std::vector<double>& def,
                              Range r = {}) const;
  // A nested map; created empty when absent so that its defaults get filled in.
  Params child(std::string_view key) const;
  // A list of maps (e.g. failure windows), one view per item with path "key[i]"; absent or
  // empty means none. reject_unused() checks the items' keys too.
  std::vector<Params> maps(std::string_view key) const;

  // Throws for the first key under this view that no component read.
  void reject_unused() const;
  // Throws for the first key of this map that is not in `known` (checked before the keys are
  // read, e.g. a scenario's sections), with the same message as reject_unused.
  void reject_unknown(const std::vector<std::string>& known) const;

  [[noreturn]] void fail(std::string_view key, const std::string& expected) const;
  std::string where(std::string_view key) const; // "file:line: path.key"
  const std::string& path() const { return path_; }
  const std::string& file() const { return file_; }
  const ParamNode& node() const { return *node_; }

private:
  Params(std::shared_ptr<ParamNode> root, ParamNode* node, std::string file, std::string path);
  ParamNode* lookup(std::string_view key) const;
  ParamNode* lookup_or_default(std::string_view key, const std::string& def) const;
  std::string key_path(std::string_view key) const;
  double parse_number(std::string_view key, const ParamNode& n, Range r) const;
  // The reads behind the public accessors, which log each key once (see key_log.hpp).
  std::int64_t integer_value(std::string_view key, std::int64_t def, Range r) const;
  std::string scalar_text(std::string_view key, const std::string& def) const;
  std::string resolve_path(std::string_view key, const std::string& def) const;
  void note(std::string_view key, KeyType type, std::optional<std::string> def, Range r = {}) const;

  std::shared_ptr<ParamNode> root_;
  ParamNode* node_;
  std::string file_;
  std::string path_;
};

// Format a double so that it reads back identically (used for filled-in defaults).
std::string format_number(double x);

// The closest candidate by edit distance, or "" if none is close enough.
std::string closest_name(std::string_view name, const std::vector<std::string>& candidates);

} // namespace dtsim
