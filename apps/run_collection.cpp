// SPDX-License-Identifier: MIT
// Loading traces into grouped table rows, with strict group keys.
#include "apps/run_collection.hpp"

#include "apps/csv_field.hpp"
#include "sim/core/errors.hpp"
#include "sim/core/params.hpp"
#include "sim/scenario/yaml_tree.hpp"
#include "sim/trace/trace_reader.hpp"

#include <algorithm>
#include <filesystem>
#include <fstream>
#include <sstream>

namespace dtsim::cli {

std::vector<std::string> trace_files(const std::vector<std::string>& inputs) {
  std::vector<std::string> files;
  for (const std::string& in : inputs) {
    if (std::filesystem::is_directory(in)) {
      std::vector<std::string> found;
      // A subfolder this user may not read holds no traces of theirs: skipped, not fatal.
      for (const auto& e : std::filesystem::recursive_directory_iterator(
               in, std::filesystem::directory_options::skip_permission_denied)) {
        const std::string p = e.path().string();
        // A .partial beside its finished trace is a checkpoint the run could not remove (it
        // was killed between the two steps of finishing): the same run, counted once.
        std::error_code ec;
        const bool superseded =
            p.ends_with(".h5.partial") &&
            std::filesystem::exists(p.substr(0, p.size() - std::string_view(".partial").size()),
                                    ec);
        if (e.is_regular_file() && (p.ends_with(".h5") || p.ends_with(".h5.partial")) &&
            !superseded)
          found.push_back(p);
      }
      std::sort(found.begin(), found.end());
      files.insert(files.end(), found.begin(), found.end());
    } else {
      files.push_back(in);
    }
  }
  return files;
}

namespace {

// Every dotted key of a scenario tree (maps and leaves), for "did you mean".
void collect_keys(const ParamNode& n, const std::string& prefix, std::vector<std::string>& out) {
  if (n.kind != ParamNode::Kind::Map)
    return;
  for (const auto& [k, child] : n.fields) {
    const std::string key = prefix.empty() ? k : prefix + "." + k;
    if (std::find(out.begin(), out.end(), key) == out.end())
      out.push_back(key);
    collect_keys(child, key, out);
  }
}

constexpr const char* kNoKey = "\x01"; // a group value for "the trace has no such key"

// The value of a dotted scenario key in a trace (or its status / name attribute).
std::string group_value(const TraceContents& t, const std::string& key, const ParamNode& scenario) {
  if (key == "status" || key == "name") {
    const auto it = t.text_attributes.find(key);
    return it == t.text_attributes.end() ? "?" : it->second;
  }
  const ParamNode* n = &scenario;
  std::stringstream path(key);
  for (std::string part; std::getline(path, part, '.');) {
    n = n->kind == ParamNode::Kind::Map ? n->find(part) : nullptr;
    if (!n)
      return kNoKey;
  }
  if (n->kind == ParamNode::Kind::Scalar)
    return n->scalar;
  std::string yaml = to_yaml(*n);
  while (!yaml.empty() && yaml.back() == '\n')
    yaml.pop_back();
  return yaml;
}

// Columns on a terminal: UTF-8 code points ("±" is two bytes, one column).
std::size_t display_width(const std::string& s) {
  std::size_t w = 0;
  for (unsigned char c : s)
    w += (c & 0xC0) != 0x80;
  return w;
}

} // namespace

void print_table(std::FILE* out, const std::vector<std::string>& header,
                 const std::vector<std::vector<std::string>>& rows, bool markdown) {
  std::vector<std::size_t> width(header.size());
  for (std::size_t c = 0; c < header.size(); ++c) {
    width[c] = display_width(header[c]);
    for (const auto& r : rows)
      width[c] = std::max(width[c], display_width(r[c]));
  }
  auto line = [&](const std::vector<std::string>& cells) {
    std::string s = markdown ? "| " : "";
    for (std::size_t c = 0; c < cells.size(); ++c) {
      s += cells[c] + std::string(width[c] - display_width(cells[c]), ' ');
      s += markdown ? " | " : "  ";
    }
    while (!s.empty() && s.back() == ' ')
      s.pop_back();
    std::fprintf(out, "%s\n", s.c_str());
  };
  line(header);
  if (markdown) {
    std::vector<std::string> sep;
    for (std::size_t w : width)
      sep.push_back(std::string(std::max<std::size_t>(3, w), '-'));
    line(sep);
  }
  for (const auto& r : rows)
    line(r);
}

std::vector<std::string> split_commas(const std::string& s) {
  std::vector<std::string> out;
  std::stringstream ss(s);
  for (std::string item; std::getline(ss, item, ',');)
    if (!item.empty())
      out.push_back(item);
  return out;
}

RunCollection collect_runs(const std::vector<std::string>& files,
                           const std::vector<std::string>& by, double target, double at_time_s,
                           const std::vector<std::string>& by_options) {
  RunCollection c;
  std::vector<std::string> known_keys = {"name", "status"};
  for (const std::string& file : files) {
    TraceContents t;
    try {
      t = read_trace(file);
    } catch (const ConfigError& e) {
      // A run still writing its .partial holds a lock: report it and go on.
      if (!file.ends_with(".partial"))
        throw;
      std::fprintf(stderr, "skipped (still running?): %s\n", e.what());
      continue;
    }
    analysis::RunRow r = analysis::summarize_run(file, t, target, at_time_s);
    const auto scenario_it = t.text_attributes.find("scenario");
    const auto scenario =
        parse_yaml_text(scenario_it == t.text_attributes.end() ? "{}" : scenario_it->second, file);
    for (const std::string& key : by)
      r.group.push_back(group_value(t, key, *scenario));
    collect_keys(*scenario, "", known_keys);
    if (const auto w = t.text_attributes.find("warnings");
        w != t.text_attributes.end() && !w->second.empty())
      c.warnings.push_back(file + ": " + w->second);
    auto text = [&](const char* name) {
      const auto it = t.text_attributes.find(name);
      return it == t.text_attributes.end() ? std::string("?") : it->second;
    };
    const std::string build = "commit " + text("build_commit") + ", " + text("build_compiler") +
                              ", -march=" + text("build_march");
    auto known = std::find_if(c.builds.begin(), c.builds.end(),
                              [&](const auto& b) { return b.first == build; });
    if (known == c.builds.end())
      c.builds.emplace_back(build, 1);
    else
      ++known->second;
    if (r.status == "diverged") {
      const auto m = t.text_attributes.find("status_message");
      c.diverged.push_back(file + ": " + (m == t.text_attributes.end() ? "" : m->second));
    }
    c.rows.push_back(std::move(r));
  }
  for (std::size_t k = 0; k < by.size(); ++k) {
    if (std::any_of(c.rows.begin(), c.rows.end(),
                    [&](const analysis::RunRow& r) { return r.group[k] != kNoKey; }))
      continue;
    const std::string guess = closest_name(by[k], known_keys);
    throw ConfigError((k < by_options.size() ? by_options[k] : "--by") + ": no trace has key '" +
                      by[k] + "'" + (guess.empty() ? "" : " (did you mean '" + guess + "'?)"));
  }
  for (analysis::RunRow& r : c.rows)
    for (std::string& v : r.group)
      if (v == kNoKey)
        v = "-";
  return c;
}

void write_runs_csv(const std::string& path, const std::vector<std::string>& by,
                    const std::vector<analysis::RunRow>& rows, const std::string& option) {
  std::ofstream out(path);
  if (!out)
    throw ConfigError(option + ": cannot write " + path);
  out << "trace,status";
  for (const std::string& k : by)
    out << ',' << k;
  for (const std::string& c : analysis::run_columns())
    out << ',' << c;
  out << '\n';
  for (const analysis::RunRow& r : rows) {
    out << csv_field(r.path) << ',' << r.status;
    for (const std::string& g : r.group)
      out << ',' << csv_field(g, true);
    for (double v : r.values)
      out << ',' << format_number(v);
    out << '\n';
  }
}

} // namespace dtsim::cli
