// SPDX-License-Identifier: MIT
// JSON Schemas (draft 2020-12) of the scenario and sweep formats, for editors and checkers.
//
// They are derived from the reads that validate a scenario, not from a second list of keys:
// the scenario loader is run on small probe scenarios with a KeyLog attached, once per value
// of every key that names a component (algorithm.name, model.kind, ..., found as the probes
// go), and every key read on the way is described with its type, default, range and allowed
// names, plus, where the probes show it, the component values it applies to. A new key in
// any component therefore appears in the schema without touching this file.
//
// The schema accepts a superset of what `dtsim validate` accepts: a range or default that
// differs between components is given as the widest one, and rules across keys (exactly one
// evaluation rule, ...) are left to dtsim. Everything the schema refuses, dtsim refuses.
#pragma once

#include <string>

namespace dtsim {

// Pretty-printed JSON text of the schema for scenario files.
std::string scenario_schema_json();
// The same for sweep files; their grid:, points: and set: keys are checked against the
// scenario keys they override.
std::string sweep_schema_json();

} // namespace dtsim
