// SPDX-License-Identifier: MIT
// Where `dtsim report` finds analysis/plot.py: in the build tree, beside an installed dtsim,
// or where the user points.
#pragma once

#include <string>
#include <vector>

namespace dtsim::cli {

// The places looked at, in order: $DTSIM_PLOT_PY (alone, when set); beside the running
// executable as `cmake --install` lays it out (<prefix>/bin/dtsim,
// <prefix>/share/dtsim/analysis/plot.py); the source tree this build came from; the install
// prefix it was configured with. The source tree comes before the configured prefix so that a
// build tree's dtsim never draws with an older installed copy.
std::vector<std::string> plot_script_candidates();

// The first candidate that exists; throws ConfigError (one line naming every place looked at
// and DTSIM_PLOT_PY) when none does.
std::string plot_script();

} // namespace dtsim::cli
