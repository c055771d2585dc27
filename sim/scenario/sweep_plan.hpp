// SPDX-License-Identifier: MIT
// A sweep file turned into its list of points: a base scenario and overrides per point.
#pragma once

#include <cstdint>
#include <map>
#include <optional>
#include <string>
#include <vector>

namespace dtsim {

// One run of a sweep: its stable name (also its trace's file stem) and the "--set"
// overrides that turn the base scenario into it.
struct SweepPoint {
  std::string name;
  std::vector<std::string> overrides;
  // Where each override's key was written in the sweep files ("sweep.yaml:7: grid.nodes"),
  // so that a point's error names that line, not a --set nobody typed.
  std::map<std::string, std::string> origin_of;
  std::string group; // the name without its seed fragment: points that differ only in seed
  std::string tuned; // "key=value" chosen by the sweep's tuning step, if any
};

// A sweep's `tune:` block: for each group of points (the points that differ only in their
// seed), run a grid of one key's values on tuning seeds, pick the best value by a criterion,
// then run the group's points (the evaluation seeds, disjoint from the tuning seeds) with it.
struct TuneSpec {
  std::string key;                  // dotted scenario key, e.g. algorithm.lr
  std::vector<double> values;       // the grid itself, or
  std::vector<double> factors;      // multiples of each group's own value of the key
  std::vector<std::uint64_t> seeds; // tuning seeds
  std::string criterion;            // a `dtsim analyze` column, e.g. final_acc
  bool maximize = true;             // goal: max | min; a diverged run counts as the worst
  // "sweep.yaml:12: tune.seeds" for each key, so that errors found later name the line.
  std::map<std::string, std::string> where;
};

struct SweepPlan {
  std::string name;
  std::string base_scenario; // path, resolved against the sweep file's folder
  std::string output_dir;
  std::vector<SweepPoint> points;
  std::optional<TuneSpec> tune;
  std::string tune_label; // name fragment label of the tuned key
};

// Sweep file keys:
//   name: <file stem>          # sweep name; default output folder runs/<name>
//   base: scenario.yaml        # required; relative to the sweep file
//   output: runs/<name>        # folder for the traces and index.csv
//   grid: {dotted.key: [v1, v2, ...], ...}   # cartesian product, first key slowest
//   points: [{dotted.key: value, ...}, ...]  # explicit points; crossed with the grid
//   labels: {dotted.key: short}              # name fragment for a key (default: its last part)
//   tune:                                    # optional: see TuneSpec
//     key: algorithm.lr
//     factors: [0.25, 0.5, 1, 2, 4]          # or values: [0.01, 0.03, 0.1]
//     seeds: [101, 102]                      # disjoint from the points' seeds
//     criterion: final_acc                   # a dtsim analyze column
//     goal: max                              # max | min
// Point names join "label=value" fragments with "_" (value as compact YAML, characters
// outside [A-Za-z0-9.+-] replaced by "-"), so they are stable across runs and machines.
// Throws ConfigError for unknown keys, empty grids, duplicate point names.
SweepPlan plan_sweep(const std::string& sweep_path);

// A point's configuration error, located: "--set nodes: expected ..." from the overrides
// becomes "sweep.yaml:7: grid.nodes (point nodes=0_seed=1): expected ..."; an error in the base
// scenario keeps its own file and line and gains the point's name.
std::string locate_point_error(const SweepPoint& point, const std::string& message);

// A value as a point-name fragment: characters outside [A-Za-z0-9.+-] become "-".
std::string name_fragment(const std::string& text);

// Points with index % count == index_k - 1 (shard K of N, 1-based): disjoint, covering.
std::vector<SweepPoint> shard(const std::vector<SweepPoint>& points, int k, int count);

} // namespace dtsim
