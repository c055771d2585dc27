// SPDX-License-Identifier: MIT
// Typed, range-checked reads of configuration keys with precise error messages.
#include "sim/core/params.hpp"

#include "sim/core/errors.hpp"
#include "sim/core/key_log.hpp"

#include <algorithm>
#include <charconv>
#include <cmath>
#include <cstdio>
#include <filesystem>
#include <sstream>

namespace dtsim {

namespace {

// `key:` with no value (or `--set key=`) is more likely a value lost in editing than a request
// for the default, which leaving the key out already says (a --set cannot leave a file's key
// out: it can only give a value).
std::string empty_value(const ParamNode& n) {
  return n.line < 0 ? "empty value; give one"
                    : "empty value; give one, or leave the key out for its default";
}

std::string describe_node(const ParamNode& n) {
  switch (n.kind) {
  case ParamNode::Kind::Null:
    return "nothing";
  case ParamNode::Kind::Scalar:
    return "'" + n.scalar + "'";
  case ParamNode::Kind::List:
    return "a list";
  case ParamNode::Kind::Map:
    return "a map";
  }
  return "?";
}

std::size_t edit_distance(std::string_view a, std::string_view b) {
  std::vector<std::size_t> prev(b.size() + 1), cur(b.size() + 1);
  for (std::size_t j = 0; j <= b.size(); ++j)
    prev[j] = j;
  for (std::size_t i = 1; i <= a.size(); ++i) {
    cur[0] = i;
    for (std::size_t j = 1; j <= b.size(); ++j)
      cur[j] = std::min({prev[j] + 1, cur[j - 1] + 1, prev[j - 1] + (a[i - 1] != b[j - 1])});
    std::swap(prev, cur);
  }
  return prev[b.size()];
}

std::string join(const std::vector<std::string>& v) {
  std::string s;
  for (const auto& x : v)
    s += (s.empty() ? "" : ", ") + x;
  return s;
}

} // namespace

bool Range::contains(double x) const {
  if (std::isnan(x))
    return false;
  const bool lo_ok = lo_open ? x > lo : x >= lo;
  const bool hi_ok = hi_open ? x < hi : x <= hi;
  return lo_ok && hi_ok;
}

namespace {
// A bound as written by a person: whole numbers in full (1000000, not 1e+06).
std::string format_bound(double x) {
  if (std::fabs(x) < 1e15 && x == std::floor(x))
    return std::to_string(static_cast<long long>(x));
  return format_number(x);
}
} // namespace

std::string Range::describe() const {
  const bool has_lo = std::isfinite(lo), has_hi = std::isfinite(hi);
  if (has_lo && has_hi)
    return std::string("in ") + (lo_open ? "(" : "[") + format_bound(lo) + ", " + format_bound(hi) +
           (hi_open ? ")" : "]");
  if (has_lo)
    return std::string(lo_open ? "> " : ">= ") + format_bound(lo);
  if (has_hi)
    return std::string(hi_open ? "< " : "<= ") + format_bound(hi);
  return "finite";
}

std::string format_number(double x) {
  char buf[32];
  for (int precision = 6; precision <= 17; ++precision) {
    std::snprintf(buf, sizeof buf, "%.*g", precision, x);
    if (std::strtod(buf, nullptr) == x)
      break;
  }
  return buf;
}

std::string closest_name(std::string_view name, const std::vector<std::string>& candidates) {
  std::string best;
  std::size_t best_d = std::max<std::size_t>(2, name.size() / 3) + 1;
  for (const auto& c : candidates) {
    const std::size_t d = edit_distance(name, c);
    if (d < best_d) {
      best_d = d;
      best = c;
    }
  }
  return best;
}

Params::Params() : Params(std::make_shared<ParamNode>(ParamNode::make_map()), "") {}

Params::Params(std::shared_ptr<ParamNode> root, std::string file)
    : Params(root, root.get(), std::move(file), "") {}

Params::Params(std::shared_ptr<ParamNode> root, ParamNode* node, std::string file, std::string path)
    : root_(std::move(root)), node_(node), file_(std::move(file)), path_(std::move(path)) {
  DTSIM_ASSERT(node_ && node_->kind == ParamNode::Kind::Map, "Params must view a map");
  node_->used = true;
}

std::string Params::key_path(std::string_view key) const {
  return path_.empty() ? std::string(key) : path_ + "." + std::string(key);
}

std::string Params::where(std::string_view key) const {
  const ParamNode* n = node_->find(std::string(key));
  if (n && n->line < 0)
    return "--set " + key_path(key);
  const int line = n && n->line > 0 ? n->line : node_->line;
  std::string s = file_.empty() ? "" : file_ + ":";
  if (line > 0)
    s += std::to_string(line) + ":";
  if (!s.empty())
    s += " ";
  return s + key_path(key);
}

void Params::fail(std::string_view key, const std::string& expected) const {
  throw ConfigError(where(key) + ": " + expected);
}

ParamNode* Params::lookup(std::string_view key) const {
  ParamNode* n = node_->find(std::string(key));
  if (n) {
    n->used = true;
    if (n->kind == ParamNode::Kind::Null)
      fail(key, empty_value(*n));
  }
  return n;
}

ParamNode* Params::lookup_or_default(std::string_view key, const std::string& def) const {
  if (ParamNode* n = lookup(key))
    return n;
  ParamNode* existing = node_->find(std::string(key));
  if (existing) {
    *existing = ParamNode::make_scalar(def, existing->line);
    existing->used = true;
    return existing;
  }
  node_->fields.emplace_back(std::string(key), ParamNode::make_scalar(def));
  node_->fields.back().second.used = true;
  return &node_->fields.back().second;
}

bool Params::has(std::string_view key) const {
  const ParamNode* n = node_->find(std::string(key));
  if (n && n->kind == ParamNode::Kind::Null)
    fail(key, empty_value(*n));
  return n != nullptr;
}

double Params::parse_number(std::string_view key, const ParamNode& n, Range r) const {
  if (n.kind != ParamNode::Kind::Scalar)
    fail(key, "expected a number " + r.describe() + ", got " + describe_node(n));
  if (n.quoted)
    fail(key, "expected a number " + r.describe() + ", got the string \"" + n.scalar +
                  "\" (a number is written without quotes)");
  const std::string& s = n.scalar;
  double x = 0;
  const char* first = s.data();
  const char* last = s.data() + s.size();
  if (!s.empty() && *first == '+')
    ++first;
  auto [ptr, ec] = std::from_chars(first, last, x);
  if (ec != std::errc() || ptr != last || s.empty()) {
    if (s == ".nan" || s == ".NaN" || s == "nan" || s == "NaN")
      x = std::nan("");
    else if (s == ".inf" || s == ".Inf" || s == "inf")
      x = std::numeric_limits<double>::infinity();
    else if (s == "-.inf" || s == "-.Inf" || s == "-inf")
      x = -std::numeric_limits<double>::infinity();
    else
      fail(key, "expected a number " + r.describe() + ", got '" + s + "'");
  }
  if (!std::isfinite(x) || !r.contains(x))
    fail(key, "expected a number " + r.describe() + ", got " + s);
  return x;
}

void Params::note(std::string_view key, KeyType type, std::optional<std::string> def,
                  Range r) const {
  if (KeyLog::active())
    KeyLog::note({key_path(key), type, std::move(def), r, {}, {}});
}

double Params::number(std::string_view key, double def, Range r) const {
  note(key, KeyType::number, format_number(def), r);
  return parse_number(key, *lookup_or_default(key, format_number(def)), r);
}

double Params::number(std::string_view key, Range r) const {
  note(key, KeyType::number, std::nullopt, r);
  const ParamNode* n = lookup(key);
  if (!n)
    fail(key, "required key is missing (expected a number " + r.describe() + ")");
  return parse_number(key, *n, r);
}

std::int64_t Params::integer(std::string_view key, std::int64_t def, Range r) const {
  note(key, KeyType::integer, std::to_string(def), r);
  return integer_value(key, def, r);
}

std::int64_t Params::integer_value(std::string_view key, std::int64_t def, Range r) const {
  const ParamNode* n = lookup_or_default(key, std::to_string(def));
  const double x = parse_number(key, *n, r);
  if (x != std::floor(x) || std::fabs(x) > 9.0e15)
    fail(key, "expected an integer " + r.describe() + ", got " + n->scalar);
  return static_cast<std::int64_t>(x);
}

std::int64_t Params::integer(std::string_view key, Range r) const {
  note(key, KeyType::integer, std::nullopt, r);
  if (!has(key))
    fail(key, "required key is missing (expected an integer " + r.describe() + ")");
  return integer_value(key, 0, r);
}

bool Params::flag(std::string_view key, bool def) const {
  note(key, KeyType::flag, def ? "true" : "false");
  const ParamNode* n = lookup_or_default(key, def ? "true" : "false");
  if (n->kind == ParamNode::Kind::Scalar && n->quoted)
    fail(key, "expected true or false, got the string \"" + n->scalar +
                  "\" (true and false are written without quotes)");
  if (n->kind == ParamNode::Kind::Scalar) {
    const std::string& s = n->scalar;
    if (s == "true" || s == "True" || s == "yes" || s == "on")
      return true;
    if (s == "false" || s == "False" || s == "no" || s == "off")
      return false;
  }
  fail(key, "expected true or false, got " + describe_node(*n));
}

std::string Params::text(std::string_view key, const std::string& def) const {
  note(key, KeyType::text, def);
  return scalar_text(key, def);
}

std::string Params::scalar_text(std::string_view key, const std::string& def) const {
  const ParamNode* n = lookup_or_default(key, def);
  if (n->kind != ParamNode::Kind::Scalar)
    fail(key, "expected a string, got " + describe_node(*n));
  return n->scalar;
}

std::string Params::text(std::string_view key) const {
  note(key, KeyType::text, std::nullopt);
  if (!has(key))
    fail(key, "required key is missing (expected a string)");
  return scalar_text(key, "");
}

std::string Params::file_path(std::string_view key, const std::string& def) const {
  note(key, KeyType::file, def);
  return resolve_path(key, def);
}

std::string Params::resolve_path(std::string_view key, const std::string& def) const {
  const std::string value = scalar_text(key, def);
  const ParamNode* n = lookup(key);
  const std::filesystem::path p(value);
  if (value.empty() || p.is_absolute() || !n || n->line <= 0 || file_.empty())
    return value;
  return (std::filesystem::path(file_).parent_path() / p).lexically_normal().string();
}

std::string Params::file_path(std::string_view key) const {
  note(key, KeyType::file, std::nullopt);
  if (!has(key))
    fail(key, "required key is missing (expected a file name)");
  return resolve_path(key, "");
}

std::string Params::choice(std::string_view key, const std::string& def,
                           const std::vector<std::string>& allowed) const {
  const std::string v = scalar_text(key, def);
  if (KeyLog::active())
    KeyLog::note({key_path(key), KeyType::choice, def, {}, allowed, v});
  if (std::find(allowed.begin(), allowed.end(), v) != allowed.end())
    return v;
  const std::string guess = closest_name(v, allowed);
  fail(key, "unknown name '" + v + "'" + (guess.empty() ? "" : " (did you mean '" + guess + "'?)") +
                "; expected one of: " + join(allowed));
}

std::vector<double> Params::numbers(std::string_view key, const std::vector<double>& def,
                                    Range r) const {
  std::string written;
  for (double x : def)
    written += (written.empty() ? "" : ", ") + format_number(x);
  note(key, KeyType::numbers, "[" + written + "]", r);
  const ParamNode* n = lookup(key);
  if (!n) {
    ParamNode list;
    list.kind = ParamNode::Kind::List;
    for (double x : def)
      list.items.push_back(ParamNode::make_scalar(format_number(x)));
    list.used = true;
    ParamNode* slot = node_->find(std::string(key));
    if (slot)
      *slot = std::move(list);
    else
      node_->fields.emplace_back(std::string(key), std::move(list));
    return def;
  }
  if (n->kind == ParamNode::Kind::Scalar)
    return {parse_number(key, *n, r)};
  if (n->kind != ParamNode::Kind::List)
    fail(key, "expected a list of numbers " + r.describe() + ", got " + describe_node(*n));
  std::vector<double> out;
  for (const ParamNode& item : n->items)
    out.push_back(parse_number(key, item, r));
  return out;
}

Params Params::child(std::string_view key) const {
  note(key, KeyType::map, std::nullopt);
  ParamNode* n = node_->find(std::string(key));
  if (!n) {
    node_->fields.emplace_back(std::string(key), ParamNode::make_map());
    n = &node_->fields.back().second;
  } else if (n->kind == ParamNode::Kind::Null) {
    *n = ParamNode::make_map(n->line);
  } else if (n->kind != ParamNode::Kind::Map) {
    fail(key, "expected a map of settings, got " + describe_node(*n));
  }
  return Params(root_, n, file_, key_path(key));
}

std::vector<Params> Params::maps(std::string_view key) const {
  note(key, KeyType::maps, std::nullopt);
  ParamNode* n = node_->find(std::string(key));
  if (!n)
    return {};
  n->used = true;
  if (n->kind == ParamNode::Kind::Null) // `failures:` with nothing: an empty list
    return {};
  if (n->kind != ParamNode::Kind::List)
    fail(key, "expected a list of maps, got " + describe_node(*n));
  std::vector<Params> out;
  for (std::size_t i = 0; i < n->items.size(); ++i) {
    ParamNode& item = n->items[i];
    if (item.kind != ParamNode::Kind::Map)
      fail(key,
           "expected a list of maps, item " + std::to_string(i) + " is " + describe_node(item));
    item.used = true;
    out.push_back(Params(root_, &item, file_, key_path(key) + "[" + std::to_string(i) + "]"));
  }
  return out;
}

namespace {
std::string unknown_key(const std::string& key, const std::vector<std::string>& known) {
  const std::string guess = closest_name(key, known);
  return "unknown key '" + key + "'" + (guess.empty() ? "" : " (did you mean '" + guess + "'?)") +
         (known.empty() ? "" : "; known keys here: " + join(known));
}
} // namespace

void Params::reject_unknown(const std::vector<std::string>& known) const {
  for (const auto& [k, v] : node_->fields)
    if (std::find(known.begin(), known.end(), k) == known.end())
      fail(k, unknown_key(k, known));
}

void Params::reject_unused() const {
  std::vector<std::string> used_keys;
  for (const auto& [k, v] : node_->fields)
    if (v.used)
      used_keys.push_back(k);
  for (const auto& [k, v] : node_->fields) {
    if (!v.used)
      fail(k, unknown_key(k, used_keys));
    if (v.kind == ParamNode::Kind::Map)
      Params(root_, const_cast<ParamNode*>(&v), file_, key_path(k)).reject_unused();
    if (v.kind == ParamNode::Kind::List)
      for (std::size_t i = 0; i < v.items.size(); ++i)
        if (v.items[i].kind == ParamNode::Kind::Map && v.items[i].used)
          Params(root_, const_cast<ParamNode*>(&v.items[i]), file_,
                 key_path(k) + "[" + std::to_string(i) + "]")
              .reject_unused();
  }
}

} // namespace dtsim
