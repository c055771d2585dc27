// SPDX-License-Identifier: MIT
// Probes the scenario loader with a KeyLog and turns what it read into JSON Schemas.
#include "sim/scenario/scenario_schema.hpp"

#include "sim/core/build_info.hpp"
#include "sim/core/errors.hpp"
#include "sim/core/key_log.hpp"
#include "sim/scenario/named_choices.hpp"
#include "sim/scenario/run_plan.hpp"
#include "sim/scenario/sweep_plan.hpp"

#include <algorithm>
#include <cmath>
#include <cstdlib>
#include <deque>
#include <filesystem>
#include <fstream>
#include <limits>
#include <map>
#include <nlohmann/json.hpp>
#include <set>

namespace dtsim {
namespace {

using Json = nlohmann::ordered_json;

constexpr const char* kDraft = "https://json-schema.org/draft/2020-12/schema";

// A small scenario that validates quickly: every probe starts from it. 16 nodes, so that the
// torus, hypercube and exponential graphs build too.
// Image-shaped, so that the CNNs validate and their keys are read in valid probes.
constexpr const char* kProbeScenario = R"(nodes: 16
data:
  dataset: synthetic
  batch_size: 8
  synthetic: {image: [1, 16, 16], classes: 4, train: 512, test: 32}
model: {kind: softmax}
stop: {steps: 1}
)";
// The same probes run again from this one: a default or bound that differs between the two
// runs follows other keys (a node index is below `nodes`, a base batch defaults to the batch
// size) and is not stated as a constant.
// Its data differ in shape too (image size, classes), so that bounds and defaults that follow
// the dataset (classes per node, the first conv's padding, a model's parameter count) are not
// stated as constants.
constexpr const char* kShadowScenario = R"(nodes: 36
data:
  dataset: synthetic
  batch_size: 4
  synthetic: {image: [1, 28, 28], classes: 6, train: 720, test: 32}
model: {kind: softmax}
system: {network: {bandwidth_Bps: 2.0e9}}
stop: {steps: 2}
)";

// The probe file's name stands for any scenario file's in defaults derived from it.
constexpr const char* kProbeFile = "FILE.yaml";

// Keys read only when present (behind has()) are not found by varying names; these probes
// write them. A probe that then fails validation still logs the keys it read.
const std::vector<std::vector<std::string>> kOptionalKeyProbes = {
    {"algorithm.lr_schedule={scale_with_nodes: {base_batch: 8}, warmup_epochs: 1, "
     "warmup_from: 0.01, decay_at: [0.5]}"},
    {"algorithm.lr_schedule={decay_epochs: [1]}"},
    {"system.compute.speed_factors=[1]"},
    {"system.compute.failures=[{node: 0, from_s: 0, to_s: 1}]"},
    {"system.network.latency_matrix=latency.csv"},
    {"topology.kind=torus", "topology.rows=4"},
    {"topology.kind=torus", "topology.cols=4"},
    {"topology.mixing={kind: file, path: W.csv}"},
};

// Bounds the exploration: one probe per name of each component-naming key, plus the
// optional-key probes, is far below it.
constexpr std::size_t kMaxProbes = 2000;

struct Probe {
  std::vector<std::string> overrides; // "--set" assignments on top of kProbeScenario
  bool valid = false;                 // the whole scenario validated
  bool optional_keys = false;         // started from kOptionalKeyProbes (see condition())
  std::vector<KeyRead> reads;
};

// Runs the loader on the probe scenario, then again with each value of every component-naming
// key it meets (breadth first, each key=value once), so that every component's keys are read.
// A probe that fails (a component needing a file, a model needing images) still contributes
// the keys read before the failure.
std::vector<Probe> run_probes(const char* base) {
  std::vector<Probe> probes;
  std::deque<std::vector<std::string>> pending{{}};
  pending.insert(pending.end(), kOptionalKeyProbes.begin(), kOptionalKeyProbes.end());
  std::set<std::string> optional_seeds;
  for (const auto& overrides : kOptionalKeyProbes)
    optional_seeds.insert(overrides.front());
  std::set<std::string> queued;
  while (!pending.empty() && probes.size() < kMaxProbes) {
    Probe probe;
    probe.overrides = std::move(pending.front());
    pending.pop_front();
    probe.optional_keys = !probe.overrides.empty() && optional_seeds.count(probe.overrides[0]);
    KeyLog log;
    {
      const KeyLog::Scope scope(log);
      try {
        plan_run_text(base, kProbeFile, probe.overrides, PlanUse::check);
        probe.valid = true;
      } catch (const std::exception&) {
        probe.valid = false;
      }
    }
    probe.reads = log.reads();
    for (const KeyRead& r : probe.reads) {
      if (r.type != KeyType::choice || r.path.find("[]") != std::string::npos)
        continue;
      for (const std::string& name : r.choices) {
        const std::string assignment = r.path + "=" + name;
        if (name == r.value || !queued.insert(assignment).second)
          continue;
        std::vector<std::string> next = probe.overrides;
        next.push_back(assignment);
        pending.push_back(std::move(next));
      }
    }
    probes.push_back(std::move(probe));
  }
  return probes;
}

// One key as all probes saw it.
struct KeyFacts {
  KeyType type = KeyType::text;
  std::vector<std::string> defaults; // distinct, in the order met
  bool ever_required = false;        // read once without a default
  Range range;
  bool range_set = false;
  std::vector<std::string> choices;
  std::set<std::size_t> valid_probes;      // indices of valid probes that read it
  bool default_follows_other_keys = false; // the shadow probes saw other defaults
  bool also_map = false; // a shorthand value or a map (mixing: metropolis | {kind: file, ...})
};

// How specific a type is, for keys read two ways (choice() reads like text()).
int rank(KeyType t) {
  switch (t) {
  case KeyType::choice:
    return 4;
  case KeyType::file:
  case KeyType::numbers:
    return 3;
  case KeyType::number:
    return 2;
  default:
    return 1;
  }
}

void widen(Range& r, const Range& other) {
  if (other.lo < r.lo || (other.lo == r.lo && !other.lo_open)) {
    r.lo = other.lo;
    r.lo_open = other.lo_open;
  }
  if (other.hi > r.hi || (other.hi == r.hi && !other.hi_open)) {
    r.hi = other.hi;
    r.hi_open = other.hi_open;
  }
}

std::string parent_of(const std::string& path) {
  const auto dot = path.rfind('.');
  return dot == std::string::npos ? "" : path.substr(0, dot);
}

std::string last_part(const std::string& path) {
  const auto dot = path.rfind('.');
  return dot == std::string::npos ? path : path.substr(dot + 1);
}

class SchemaBuilder {
public:
  // `shadow`: the same probes from kShadowScenario, or null (the sweep's own keys).
  SchemaBuilder(const std::vector<Probe>& probes, const std::vector<Probe>* shadow)
      : probes_(probes) {
    collect(probes, facts_, &order_);
    if (shadow) {
      std::map<std::string, KeyFacts> other;
      collect(*shadow, other, nullptr);
      for (auto& [key, f] : facts_) {
        const auto it = other.find(key);
        if (it == other.end())
          continue;
        const KeyFacts& g = it->second;
        f.default_follows_other_keys = f.defaults != g.defaults;
        if (f.range.lo != g.range.lo || f.range.lo_open != g.range.lo_open)
          f.range.lo = -std::numeric_limits<double>::infinity();
        if (f.range.hi != g.range.hi || f.range.hi_open != g.range.hi_open)
          f.range.hi = std::numeric_limits<double>::infinity();
      }
    }
    for (const NamedChoices& c : named_choices())
      for (const auto& [name, help] : c.names)
        help_[c.key][name] = help;
  }

  // The schema of the map at `path` ("" = the file's root).
  Json object_schema(const std::string& path) const {
    Json properties = Json::object();
    std::vector<std::string> required;
    for (const std::string& key : order_) {
      if (parent_of(key) != path)
        continue;
      properties[last_part(key)] = key_schema(key);
      const KeyFacts& f = facts_.at(key);
      // Sections and lists of maps may always be left out (child() and maps() make them).
      const bool section = f.type == KeyType::map || f.type == KeyType::maps;
      if (!section && f.ever_required && f.defaults.empty() && condition(key).empty() &&
          always_read_with_parent(key))
        required.push_back(last_part(key));
    }
    Json s = {{"type", "object"}, {"properties", properties}, {"additionalProperties", false}};
    if (!required.empty())
      s["required"] = required;
    return s;
  }

  // Every key with its dotted path and a JSON pointer to its schema below `root_pointer`:
  // what a sweep's grid:, points: and set: may override.
  std::vector<std::pair<std::string, std::string>> dotted_keys(const std::string& root) const {
    std::vector<std::pair<std::string, std::string>> out;
    for (const std::string& key : order_) {
      if (key.find("[]") != std::string::npos)
        continue;
      std::string pointer = root;
      std::size_t start = 0;
      while (true) {
        const auto dot = key.find('.', start);
        pointer += "/properties/" + key.substr(start, dot - start);
        if (dot == std::string::npos)
          break;
        start = dot + 1;
      }
      out.emplace_back(key, pointer);
    }
    return out;
  }

private:
  static void collect(const std::vector<Probe>& probes, std::map<std::string, KeyFacts>& facts,
                      std::vector<std::string>* order) {
    for (std::size_t i = 0; i < probes.size(); ++i)
      for (const KeyRead& r : probes[i].reads)
        add(facts, order, i, probes[i].valid, r);
  }

  static void add(std::map<std::string, KeyFacts>& facts, std::vector<std::string>* order,
                  std::size_t probe, bool valid, const KeyRead& r) {
    auto [it, fresh] = facts.try_emplace(r.path);
    KeyFacts& f = it->second;
    if (fresh) {
      if (order)
        order->push_back(r.path);
      f.type = r.type;
    } else if ((r.type == KeyType::map) != (f.type == KeyType::map)) {
      f.also_map = true;
      if (f.type == KeyType::map)
        f.type = r.type; // the shorthand's type; the map form is added in key_schema
    } else if (rank(r.type) > rank(f.type)) {
      f.type = r.type;
    }
    if (r.default_value) {
      if (std::find(f.defaults.begin(), f.defaults.end(), *r.default_value) == f.defaults.end())
        f.defaults.push_back(*r.default_value);
    } else {
      f.ever_required = true;
    }
    if (r.type == KeyType::number || r.type == KeyType::integer || r.type == KeyType::numbers) {
      if (!f.range_set)
        f.range = r.range;
      else
        widen(f.range, r.range);
      f.range_set = true;
    }
    for (const std::string& c : r.choices)
      if (std::find(f.choices.begin(), f.choices.end(), c) == f.choices.end())
        f.choices.push_back(c);
    if (valid)
      f.valid_probes.insert(probe);
  }

  // The value a component-naming key had in a probe, or "" where the probe did not read it.
  std::string value_in(const std::string& choice_key, std::size_t probe) const {
    for (const KeyRead& r : probes_[probe].reads)
      if (r.path == choice_key && r.type == KeyType::choice)
        return r.value;
    return "";
  }

  // "used when algorithm.name is choco, swarm" where the valid probes show that a key is read
  // only for some values of a component-naming key of the same map.
  std::string condition(const std::string& key) const {
    const std::string map = parent_of(key);
    for (const std::string& other : order_) {
      const KeyFacts& o = facts_.at(other);
      if (other == key || o.type != KeyType::choice || parent_of(other) != map)
        continue;
      // Only the probes that vary names count: the optional-key probes all keep the
      // default components, and would make their keys look specific to those.
      std::set<std::string> all, with_key;
      for (std::size_t p : o.valid_probes)
        if (!probes_[p].optional_keys)
          all.insert(value_in(other, p));
      for (std::size_t p : facts_.at(key).valid_probes)
        if (o.valid_probes.count(p) && !probes_[p].optional_keys)
          with_key.insert(value_in(other, p));
      if (with_key.empty() || with_key.size() == all.size())
        continue;
      std::string names;
      for (const std::string& v : o.choices)
        if (with_key.count(v))
          names += (names.empty() ? "" : ", ") + v;
      return "used when " + other + " is " + names;
    }
    return "";
  }

  // A required key counts as required only if every valid probe that read its map read it.
  bool always_read_with_parent(const std::string& key) const {
    const std::string map = parent_of(key);
    if (map.empty())
      return facts_.at(key).valid_probes.size() ==
             static_cast<std::size_t>(std::count_if(probes_.begin(), probes_.end(),
                                                    [](const Probe& p) { return p.valid; }));
    const auto it = facts_.find(map);
    return it != facts_.end() && it->second.valid_probes == facts_.at(key).valid_probes;
  }

  static std::string bounds_text(const Range& r) {
    const std::string d = r.describe();
    return d == "finite" ? "" : " " + d;
  }

  // Whole numbers as JSON integers (1, not 1.0), as a person writes them.
  static Json number_json(double x) {
    if (std::fabs(x) < 1e15 && x == std::floor(x))
      return static_cast<std::int64_t>(x);
    return x;
  }

  static void add_bounds(Json& s, const Range& r) {
    if (std::isfinite(r.lo))
      s[r.lo_open ? "exclusiveMinimum" : "minimum"] = number_json(r.lo);
    if (std::isfinite(r.hi))
      s[r.hi_open ? "exclusiveMaximum" : "maximum"] = number_json(r.hi);
  }

  static Json typed_default(KeyType t, const std::string& text) {
    if (t == KeyType::flag)
      return text == "true";
    if (t == KeyType::number || t == KeyType::integer)
      return number_json(std::strtod(text.c_str(), nullptr));
    if (t == KeyType::numbers) {
      Json list = Json::array();
      std::string item;
      for (char c : text.substr(1, text.size() - 2) + ",")
        if (c == ',') {
          if (!item.empty())
            list.push_back(number_json(std::strtod(item.c_str(), nullptr)));
          item.clear();
        } else if (c != ' ') {
          item += c;
        }
      return list;
    }
    return text;
  }

  Json key_schema(const std::string& key) const {
    const KeyFacts& f = facts_.at(key);
    Json s;
    std::string what;
    switch (f.type) {
    case KeyType::map:
      s = object_schema(key);
      break;
    case KeyType::maps:
      s = {{"type", "array"}, {"items", object_schema(key + "[]")}};
      break;
    case KeyType::number:
    case KeyType::integer: {
      s = {{"type", f.type == KeyType::number ? "number" : "integer"}};
      add_bounds(s, f.range);
      what =
          std::string(f.type == KeyType::number ? "a number" : "an integer") + bounds_text(f.range);
      break;
    }
    case KeyType::numbers: {
      Json item = {{"type", "number"}};
      add_bounds(item, f.range);
      s = {{"anyOf", {item, {{"type", "array"}, {"items", item}}}}};
      what = "a number or a list of numbers" + bounds_text(f.range);
      break;
    }
    case KeyType::flag:
      s = {{"type", "boolean"}};
      break;
    case KeyType::file:
      s = {{"type", "string"}};
      what = "a file or folder name, relative to this file";
      break;
    case KeyType::text:
      s = {{"type", "string"}};
      break;
    case KeyType::choice: {
      s = {{"enum", f.choices}};
      const auto help = help_.find(key);
      if (help != help_.end()) {
        for (const std::string& c : f.choices)
          if (help->second.count(c))
            what += (what.empty() ? "" : "; ") + c + ": " + help->second.at(c);
      } else {
        for (const std::string& c : f.choices)
          what += (what.empty() ? "one of " : ", ") + c;
      }
      break;
    }
    }
    if (f.type != KeyType::map && f.type != KeyType::maps) {
      const std::string stem = std::filesystem::path(kProbeFile).stem().string();
      if (f.defaults.size() == 1 && f.defaults.front().find(stem) != std::string::npos)
        what += std::string(what.empty() ? "" : ". ") + "Default " + f.defaults.front() + ", " +
                stem + " being the scenario file's name without .yaml";
      else if (f.defaults.size() == 1 && !f.default_follows_other_keys)
        s["default"] = typed_default(f.type, f.defaults.front());
      else if (f.default_follows_other_keys)
        what += std::string(what.empty() ? "" : ". ") + "Default depends on the other keys";
      else if (f.defaults.size() > 1) {
        std::string all;
        for (const std::string& d : f.defaults)
          if (!d.empty()) // text("key", "") reads a key as "is it set?"
            all += (all.empty() ? "" : ", ") + d;
        what += std::string(what.empty() ? "" : ". ") + "Default depends on the other keys (" +
                all + ")";
      }
    }
    if (f.also_map)
      s = {{"anyOf", {s, object_schema(key)}}};
    const std::string when = condition(key);
    if (!when.empty())
      what += std::string(what.empty() ? "" : ". ") + "Used when" + when.substr(9);
    if (!what.empty())
      s["description"] = what;
    return s;
  }

  const std::vector<Probe>& probes_;
  std::map<std::string, KeyFacts> facts_;
  std::vector<std::string> order_; // paths in the order first read
  std::map<std::string, std::map<std::string, std::string>> help_;
};

std::string header_description(const std::string& what) {
  return what + " Generated by dtsim " + build_info().version + " (" + build_info().commit +
         ") from the reads that validate it; `dtsim validate` stays the final word (rules "
         "across keys, and ranges that differ between components, are checked there).";
}

// The sweep loader's own keys (name, base, output, tune), read the same way: by loading a
// probe sweep in a temporary folder.
std::vector<KeyRead> sweep_reads() {
  char folder_template[] = "/tmp/dtsim-schema-XXXXXX";
  const char* made = mkdtemp(folder_template);
  if (!made)
    throw std::runtime_error("schema: cannot create a temporary folder in /tmp");
  const std::filesystem::path folder(made);
  std::ofstream(folder / "base.yaml") << kProbeScenario;
  const std::filesystem::path sweep_file = folder / kProbeFile;
  std::ofstream(sweep_file)
      << "base: base.yaml\ngrid: {seed: [1]}\n"
         "tune: {key: algorithm.lr, values: [0.1], seeds: [2], criterion: final_acc}\n";
  KeyLog log;
  {
    const KeyLog::Scope scope(log);
    try {
      plan_sweep(sweep_file.string());
    } catch (const std::exception&) {
      std::filesystem::remove_all(folder);
      throw;
    }
  }
  std::filesystem::remove_all(folder);
  std::vector<KeyRead> reads;
  for (const KeyRead& r : log.reads())
    if (r.path.rfind("labels", 0) != 0) // labels: free-form, described by the caller
      reads.push_back(r);
  return reads;
}

} // namespace

std::string scenario_schema_json() {
  const std::vector<Probe> probes = run_probes(kProbeScenario);
  const std::vector<Probe> shadow = run_probes(kShadowScenario);
  const SchemaBuilder builder(probes, &shadow);
  Json schema = {{"$schema", kDraft},
                 {"title", "dtsim scenario"},
                 {"description", header_description("A dtsim scenario file (YAML).")}};
  schema.update(builder.object_schema(""));
  return schema.dump(2) + "\n";
}

std::string sweep_schema_json() {
  const std::vector<Probe> probes = run_probes(kProbeScenario);
  const std::vector<Probe> shadow = run_probes(kShadowScenario);
  const SchemaBuilder scenario(probes, &shadow);
  Json scenario_schema = scenario.object_schema("");

  Probe sweep_probe;
  sweep_probe.valid = true;
  sweep_probe.reads = sweep_reads();
  const std::vector<Probe> sweep_probes{sweep_probe};
  const SchemaBuilder sweep(sweep_probes, nullptr);
  Json schema = {{"$schema", kDraft},
                 {"title", "dtsim sweep"},
                 {"description", header_description("A dtsim sweep file (YAML).")}};
  schema.update(sweep.object_schema(""));

  // grid:, points: and set: map dotted scenario keys to values; each value is checked
  // against that key's schema (in $defs.scenario).
  Json grid = Json::object(), one = Json::object();
  for (const auto& [key, pointer] : scenario.dotted_keys("#/$defs/scenario")) {
    one[key] = {{"$ref", pointer}};
    grid[key] = {{"type", "array"}, {"minItems", 1}, {"items", {{"$ref", pointer}}}};
  }
  const Json settings = {{"type", "object"}, {"properties", one}, {"additionalProperties", false}};
  Json& props = schema["properties"];
  props["grid"] = {{"description", "dotted scenario keys to lists of values; the points are "
                                   "their cartesian product, first key slowest"},
                   {"type", "object"},
                   {"properties", grid},
                   {"additionalProperties", false}};
  props["points"] = {{"description",
                      "explicit points (maps of dotted keys to values), crossed with the grid; "
                      "or {from: SWEEP.yaml} for that file's points"},
                     {"anyOf",
                      {{{"type", "array"}, {"items", settings}},
                       {{"type", "object"},
                        {"properties", {{"from", {{"type", "string"}}}}},
                        {"required", {"from"}},
                        {"additionalProperties", false}}}}};
  props["set"] = settings;
  props["set"]["description"] = "overrides every point carries, outside its name";
  props["labels"] = {{"description", "name fragment for a dotted key (default: its last part)"},
                     {"type", "object"},
                     {"additionalProperties", {{"type", "string"}}}};
  schema["$defs"] = {{"scenario", scenario_schema}};
  return schema.dump(2) + "\n";
}

} // namespace dtsim
