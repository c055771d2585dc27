// SPDX-License-Identifier: MIT
// A sweep file turned into its list of points: a base scenario and overrides per point.
#pragma once

#include <string>
#include <vector>

namespace dtsim {

// One run of a sweep: its stable name (also its trace's file stem) and the "--set"
// overrides that turn the base scenario into it.
struct SweepPoint {
  std::string name;
  std::vector<std::string> overrides;
};

struct SweepPlan {
  std::string name;
  std::string base_scenario; // path, resolved against the sweep file's folder
  std::string output_dir;
  std::vector<SweepPoint> points;
};

// Sweep file keys:
//   name: <file stem>          # sweep name; default output folder runs/<name>
//   base: scenario.yaml        # required; relative to the sweep file
//   output: runs/<name>        # folder for the traces and index.csv
//   grid: {dotted.key: [v1, v2, ...], ...}   # cartesian product, first key slowest
//   points: [{dotted.key: value, ...}, ...]  # explicit points; crossed with the grid
//   labels: {dotted.key: short}              # name fragment for a key (default: its last part)
// Point names join "label=value" fragments with "_" (value as compact YAML, characters
// outside [A-Za-z0-9.+-] replaced by "-"), so they are stable across runs and machines.
// Throws ConfigError for unknown keys, empty grids, duplicate point names.
SweepPlan plan_sweep(const std::string& sweep_path);

// Points with index % count == index_k - 1 (shard K of N, 1-based): disjoint, covering.
std::vector<SweepPoint> shard(const std::vector<SweepPoint>& points, int k, int count);

} // namespace dtsim
