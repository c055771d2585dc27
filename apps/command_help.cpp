// SPDX-License-Identifier: MIT
#include "apps/command_help.hpp"

#include <map>

namespace dtsim::cli {

std::string command_help(const std::string& command) {
  static const std::map<std::string, std::string> help = {
      {"run", R"(usage: dtsim run SCENARIO.yaml [options]
Runs one scenario and writes its HDF5 trace (a killed run leaves OUT.h5.partial).
  -o, --output OUT.h5   trace path (default: the scenario's output.path, else runs/NAME.h5)
  --set key=value       override a scenario key by its dotted path (repeatable), e.g.
                        --set nodes=32 --set 'algorithm={name: dsgd, lr: 0.1}'
  --threads N           worker threads (default: all cores; results do not depend on it)
  -q, --quiet           no progress line
The progress line shows t = simulated seconds, epochs, updates, the last training loss and
test accuracy, and the ETA in wall-clock time. Exit codes: 0 completed, 1 failure, 2 bad
input, 3 diverged, 130 interrupted.
)"},
      {"validate", R"(usage: dtsim validate SCENARIO.yaml... [--set key=value]...
Checks scenario files (keys, values, data, topology) without running them; prints one line
per file. --set overrides apply to every file. Exit 0 when all are valid, else 2.
)"},
      {"sweep", R"(usage: dtsim sweep SWEEP.yaml [options]
Runs every point of a sweep file (grid x points, optional tune: block), one trace each,
and keeps DIR/index.csv up to date.
  -o, --output DIR      output folder (default: the sweep's output:, else runs/NAME)
  -j, --jobs N          points run at a time (default 1)
  --resume              keep finished traces whose settings match; rerun the rest
  --shard K/N           run only the K-th of N interleaved shares of the points
  --dry-run             validate every point and list them with their --set overrides
Exit 0 when every point produced a trace (diverged runs are results), 1 when some
failed, 2 on bad input, 130 when interrupted (--resume runs the rest).
)"},
      {"analyze", R"(usage: dtsim analyze TRACE.h5... | DIR [options]
Stability measures and run totals per trace, or per group of traces.
  --by key,...          group by scenario keys (dotted) or label; mean, sample std, 95% CI
  --columns c1,c2,...   measures to show (an unknown one is refused, with a did-you-mean)
  --baseline key=value  paired differences (same seeds) and % gains against that group
  --target ACC          accuracy for time_to_target_s etc. (default 0.8)
  --at-time SECONDS     simulated time for acc_at_time (test accuracy interpolated there)
  --markdown            a Markdown table
  --csv OUT.csv         also write one row per trace with every measure
  -q, --quiet           with --csv: write the file only, print no table
)"},
      {"report", R"(usage: dtsim report SWEEP_DIR [options]
A Markdown report of a sweep with PNG figures: results with 95% CIs, curves, measures
against a key, tuning choices, diverged runs, warnings, provenance.
  -o, --output OUT.md   report path (default SWEEP_DIR/report.md; figures beside it)
  --by key,...          what tells configurations apart (default label)
  --vs key              the x axis of the measures figure (default nodes)
  --target ACC          accuracy target for the time-to-target measures
)"},
      {"topology", R"(usage: dtsim topology KIND --nodes N [options]
Prints a topology's size, degrees, diameter, spectral gap and smallest eigenvalue of W
(and, for time-varying kinds, the period and how one period averages).
  -n, --nodes N         number of nodes
  --seed S              seed of random kinds (default 1)
  --set key=value       a topology key (mixing=uniform, p=0.2, file=edges.txt, ...); the
                        scenario's dotted form topology.key=value is accepted too
)"},
      {"schema", R"(usage: dtsim schema [scenario|sweep]
Prints the JSON Schema (draft 2020-12) of scenario files (default) or sweep files, derived
from the reads that validate them: every key with its type, default, range, allowed names
and the components it applies to. For editors: see docs/scenarios.md, "Editor support".
)"},
      {"list", R"(usage: dtsim list
Lists the registered algorithms, topologies, models, partitions, compressors, example
orders and compute-time distributions with one line each.
)"},
  };
  const auto it = help.find(command);
  return it == help.end() ? std::string() : it->second;
}

} // namespace dtsim::cli
