// SPDX-License-Identifier: MIT
// EventLevel: how much of the per-event log a trace keeps (scenario key output.events).
#pragma once

namespace dtsim {

// None and Summary write no /events dataset (Summary runs still get the per-node columns and
// the staleness histogram, which every trace has); Full writes one /events row per event.
enum class EventLevel { None, Summary, Full };

inline const char* to_string(EventLevel level) {
  switch (level) {
  case EventLevel::None:
    return "none";
  case EventLevel::Summary:
    return "summary";
  case EventLevel::Full:
    return "full";
  }
  return "unknown";
}

} // namespace dtsim
