// SPDX-License-Identifier: MIT
// Expanding a sweep file's grid and points into named runs.
#include "sim/scenario/sweep_plan.hpp"

#include "sim/core/errors.hpp"
#include "sim/core/params.hpp"
#include "sim/scenario/run_plan.hpp"
#include "sim/scenario/yaml_tree.hpp"

#include <algorithm>
#include <filesystem>
#include <map>
#include <set>
#include <system_error>

namespace dtsim {
namespace {

// A value as one line of flow-style YAML, usable in "--set key=value".
void mark_used(ParamNode& n) {
  n.used = true;
  for (auto& [key, child] : n.fields)
    mark_used(child);
  for (ParamNode& item : n.items)
    mark_used(item);
}

} // namespace

std::string name_fragment(const std::string& text) {
  std::string out;
  for (char c : text) {
    const bool keep = (c >= 'a' && c <= 'z') || (c >= 'A' && c <= 'Z') || (c >= '0' && c <= '9') ||
                      c == '.' || c == '+' || c == '-';
    out += keep ? c : '-';
  }
  // Collapse runs of '-' and trim them, so "{kind: iid}" reads "kind-iid".
  std::string collapsed;
  for (char c : out)
    if (!(c == '-' && (collapsed.empty() || collapsed.back() == '-')))
      collapsed += c;
  while (!collapsed.empty() && collapsed.back() == '-')
    collapsed.pop_back();
  return collapsed;
}

namespace {

struct Setting {
  std::string key;
  std::string value;  // one-line YAML, usable in --set key=value
  std::string origin; // "file:line: section.key", where it was written
  std::string shown;  // what the point's name shows: a scalar's text, unquoted
};

std::string shown(const ParamNode& n) {
  return n.kind == ParamNode::Kind::Scalar ? n.scalar : to_flow_yaml(n);
}

std::string origin(const std::string& file, int line, const std::string& what) {
  return file + ":" + std::to_string(line) + ": " + what;
}

// A list of points, each a map of dotted keys to values.
TuneSpec read_tune(const Params& t) {
  TuneSpec spec;
  spec.key = t.text("key");
  if (spec.key == "seed" || spec.key == "name")
    t.fail("key", "a scenario key other than seed and name");
  spec.values = t.numbers("values", {});
  spec.factors = t.numbers("factors", {}, Range::positive());
  if (spec.values.empty() == spec.factors.empty())
    t.fail("values", "exactly one of tune.values (the grid) and tune.factors (multiples of each "
                     "group's own value), as a non-empty list");
  for (double s : t.numbers("seeds", {}, Range::non_negative()))
    spec.seeds.push_back(static_cast<std::uint64_t>(s));
  if (spec.seeds.empty())
    t.fail("seeds", "a non-empty list of tuning seeds, e.g. [101, 102]");
  spec.criterion = t.text("criterion", "final_acc");
  spec.maximize = t.choice("goal", "max", {"max", "min"}) == "max";
  for (const char* key : {"key", "values", "factors", "seeds", "criterion", "goal"})
    spec.where[key] = t.where(key);
  t.reject_unused();
  return spec;
}

std::vector<std::vector<Setting>> read_points(const ParamNode& list, const std::string& path) {
  std::vector<std::vector<Setting>> points;
  for (const ParamNode& pt : list.items) {
    if (pt.kind != ParamNode::Kind::Map)
      throw ConfigError(path + ":" + std::to_string(pt.line) +
                        ": points: expected a map of dotted keys to values");
    std::vector<Setting> s;
    for (const auto& [key, value] : pt.fields)
      s.push_back({key, to_flow_yaml(value),
                   origin(path, value.line, "points[" + std::to_string(points.size()) + "]." + key),
                   shown(value)});
    points.push_back(std::move(s));
  }
  return points;
}

} // namespace

SweepPlan plan_sweep(const std::string& sweep_path) {
  auto tree = parse_yaml_file(sweep_path);
  const Params p(tree, sweep_path);
  SweepPlan plan;
  plan.name = p.text("name", std::filesystem::path(sweep_path).stem().string());
  const std::filesystem::path folder = std::filesystem::path(sweep_path).parent_path();
  const std::string base = p.text("base");
  plan.base_scenario = (folder / base).lexically_normal().string();
  std::error_code ec; // a path the OS refuses (e.g. a name too long) is a missing file too
  if (!std::filesystem::exists(plan.base_scenario, ec))
    p.fail("base", "no such scenario file: " + plan.base_scenario);
  // Relative to the sweep file, like every path written in a file (the default: to the
  // current folder).
  plan.output_dir = p.file_path("output", "runs/" + plan.name);

  // Labels for name fragments.
  const Params labels = p.child("labels");
  // Default: the key's last part, or for .name / .kind the part before it
  // (algorithm.name -> algorithm, data.partition.kind -> partition), so that a point's
  // name never says "name=" (the run's own `name` key).
  auto label_of = [&](const std::string& key) {
    if (labels.has(key))
      return labels.text(key);
    const auto dot = key.rfind('.');
    if (dot == std::string::npos)
      return key;
    const std::string last = key.substr(dot + 1);
    if (last != "name" && last != "kind")
      return last;
    const auto before = key.rfind('.', dot - 1);
    return key.substr(before == std::string::npos ? 0 : before + 1,
                      dot - (before == std::string::npos ? 0 : before + 1));
  };

  // set: overrides every point carries (before its own settings, not in its name), so that
  // a study need not copy the base file to change one key.
  std::vector<std::string> common;
  std::map<std::string, std::string> common_origins;
  for (const char* key : {"set", "grid", "points"}) // `set:` with nothing: nothing to set
    if (ParamNode* section = tree->find(key); section && section->kind == ParamNode::Kind::Null)
      section->used = true;
  if (ParamNode* set = tree->find("set"); set && set->kind != ParamNode::Kind::Null) {
    if (set->kind != ParamNode::Kind::Map)
      p.fail("set", "expected a map of dotted keys to values, e.g. {stop.epochs: 4}");
    set->used = true;
    for (auto& [key, value] : set->fields) {
      mark_used(value); // its keys are checked where the override applies: in the scenario
      common.push_back(key + "=" + to_flow_yaml(value));
      common_origins[key] = origin(sweep_path, value.line, "set." + key);
    }
  }

  // The grid: one list of settings per key, in file order.
  std::vector<std::vector<Setting>> axes;
  ParamNode* grid = tree->find("grid");
  if (grid && grid->kind != ParamNode::Kind::Null) {
    if (grid->kind != ParamNode::Kind::Map)
      p.fail("grid", "expected a map of dotted keys to lists of values");
    grid->used = true;
    for (auto& [key, values] : grid->fields) {
      values.used = true;
      if (values.kind != ParamNode::Kind::List || values.items.empty())
        throw ConfigError(sweep_path + ":" + std::to_string(values.line) + ": grid." + key +
                          ": expected a non-empty list of values");
      std::vector<Setting> axis;
      for (std::size_t k = 0; k < values.items.size(); ++k)
        axis.push_back({key, to_flow_yaml(values.items[k]),
                        origin(sweep_path, values.items[k].line,
                               "grid." + key + "[" + std::to_string(k) + "]"),
                        shown(values.items[k])});
      axes.push_back(std::move(axis));
    }
  }
  std::vector<std::vector<Setting>> explicit_points;
  ParamNode* points = tree->find("points");
  if (points && points->kind == ParamNode::Kind::Map) {
    // points: {from: other.yaml}: that sweep file's points list, so that studies over the
    // same methods share one definition of them.
    const Params from = p.child("points");
    const std::string other = (folder / from.text("from")).lexically_normal().string();
    from.reject_unused();
    if (!std::filesystem::exists(other, ec))
      from.fail("from", "no such sweep file: " + other);
    const auto other_tree = parse_yaml_file(other);
    const ParamNode* list = other_tree->find("points");
    if (!list || list->kind != ParamNode::Kind::List)
      from.fail("from", other + " has no list of points (a points: {from: ...} is not followed)");
    explicit_points = read_points(*list, other);
  } else if (points && points->kind != ParamNode::Kind::Null) {
    points->used = true;
    if (points->kind != ParamNode::Kind::List)
      p.fail("points", "expected a list of maps of dotted keys to values, or {from: SWEEP.yaml}");
    explicit_points = read_points(*points, sweep_path);
  }
  // grid, points and set are read from the tree directly: mark them known for "did you mean".
  for (const char* key : {"grid", "points", "set"})
    if (!tree->find(key)) {
      tree->fields.emplace_back(key, ParamNode());
      tree->fields.back().second.used = true;
    }
  if (p.has("tune")) {
    plan.tune = read_tune(p.child("tune"));
    for (const std::string& o : common)
      if (o.rfind(plan.tune->key + "=", 0) == 0)
        throw ConfigError(sweep_path + ": tune.key " + plan.tune->key +
                          " is also fixed by set:; the tuning step chooses it");
  }
  // The keys the points vary. One that every point sets (a grid axis, the tuned key, a key of
  // every explicit point) replaces whatever `set:` gave it or below it for all of them.
  std::set<std::string> swept, always_set;
  for (const auto& axis : axes) {
    swept.insert(axis.front().key);
    always_set.insert(axis.front().key);
  }
  for (std::size_t i = 0; i < explicit_points.size(); ++i)
    for (const Setting& setting : explicit_points[i]) {
      swept.insert(setting.key);
      if (std::all_of(explicit_points.begin(), explicit_points.end(), [&](const auto& other) {
            return std::any_of(other.begin(), other.end(),
                               [&](const Setting& o) { return o.key == setting.key; });
          }))
        always_set.insert(setting.key);
    }
  if (plan.tune) {
    swept.insert(plan.tune->key);
    always_set.insert(plan.tune->key);
  }
  const auto within = [](const std::string& key, const std::string& section) {
    return key == section || key.rfind(section + ".", 0) == 0;
  };
  for (const std::string& o : common) {
    const std::string key = o.substr(0, o.find('='));
    for (const std::string& k : always_set)
      if (within(key, k))
        throw ConfigError(common_origins.at(key) + ": every point sets " + k +
                          " itself, which replaces this value; set it in the points or the base "
                          "scenario");
  }
  // Labels are read lazily above; touch every label so that unknown ones are reported, and
  // refuse one for a key no point varies (a typo would leave the names as they were).
  for (auto& [key, node] : labels.node().fields) {
    labels.text(key);
    if (!swept.count(key)) {
      std::string keys;
      for (const std::string& k : swept)
        keys += (keys.empty() ? "" : ", ") + k;
      labels.fail(key,
                  "no grid axis, point or tune key is " + key + " (the swept keys: " + keys + ")");
    }
  }
  if (plan.tune)
    plan.tune_label = label_of(plan.tune->key);
  p.reject_unused();
  if (axes.empty() && explicit_points.empty())
    p.fail("grid", "a sweep needs a grid or points");

  // Cartesian product, first key slowest; then crossed with the explicit points.
  std::vector<std::vector<Setting>> combos(1);
  for (const auto& axis : axes) {
    std::vector<std::vector<Setting>> next;
    for (const auto& c : combos)
      for (const Setting& s : axis) {
        next.push_back(c);
        next.back().push_back(s);
      }
    combos = std::move(next);
  }
  if (!explicit_points.empty()) {
    std::vector<std::vector<Setting>> crossed;
    for (const auto& c : combos)
      for (const auto& e : explicit_points) {
        crossed.push_back(c);
        crossed.back().insert(crossed.back().end(), e.begin(), e.end());
      }
    combos = std::move(crossed);
  }

  std::set<std::string> names;
  for (const auto& c : combos) {
    SweepPoint pt;
    pt.overrides = common;
    pt.origin_of = common_origins;
    for (const Setting& s : c) {
      pt.origin_of[s.key] = s.origin;
      const std::string fragment = label_of(s.key) + "=" + name_fragment(s.shown);
      pt.name += (pt.name.empty() ? "" : "_") + fragment;
      if (s.key != "seed")
        pt.group += (pt.group.empty() ? "" : "_") + fragment;
      pt.overrides.push_back(s.key + "=" + s.value);
      if (plan.tune && s.key == plan.tune->key)
        throw ConfigError(sweep_path + ": tune.key " + s.key +
                          " is also set by the grid or a point; the tuning step chooses it");
    }
    // A point's run is named <sweep>_<point> (and its trace <point>.h5): a name past a file
    // name's limit would only fail once its run started.
    if (plan.name.size() + 1 + pt.name.size() > kLongestRunName)
      throw ConfigError(sweep_path + ": point " + pt.name.substr(0, 60) + "... has a name of " +
                        std::to_string(plan.name.size() + 1 + pt.name.size()) +
                        " characters with the sweep's, more than " +
                        std::to_string(kLongestRunName) +
                        "; shorten it with labels: {key: short} or shorter values");
    if (!names.insert(pt.name).second)
      throw ConfigError(sweep_path + ": two points are both named '" + pt.name +
                        "'; give the keys distinct labels: {labels: {key: short}}");
    pt.overrides.push_back("name=" + plan.name + "_" + pt.name);
    plan.points.push_back(std::move(pt));
  }
  return plan;
}

std::string locate_point_error(const SweepPoint& point, const std::string& message) {
  const std::string from_set = "--set ";
  const auto colon = message.find(": ");
  if (message.rfind(from_set, 0) != 0 || colon == std::string::npos)
    return "point " + point.name + ": " + message;
  const std::string key = message.substr(from_set.size(), colon - from_set.size());
  // The override that wrote the key: the longest one equal to it or a section above it.
  const std::pair<const std::string, std::string>* source = nullptr;
  for (const auto& entry : point.origin_of)
    if ((key == entry.first || key.rfind(entry.first + ".", 0) == 0) &&
        (!source || entry.first.size() > source->first.size()))
      source = &entry;
  if (!source)
    return "point " + point.name + ": " + message;
  return source->second + key.substr(source->first.size()) + " (point " + point.name + ")" +
         message.substr(colon);
}

std::vector<SweepPoint> shard(const std::vector<SweepPoint>& points, int k, int count) {
  std::vector<SweepPoint> out;
  for (std::size_t i = 0; i < points.size(); ++i)
    if (static_cast<int>(i % static_cast<std::size_t>(count)) == k - 1)
      out.push_back(points[i]);
  return out;
}

} // namespace dtsim
