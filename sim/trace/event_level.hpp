// SPDX-License-Identifier: MIT
// EventLevel: how much of the per-event log a trace keeps (scenario key output.events).
#pragma once

#include <string_view>

namespace dtsim {

// None and Summary write no /events dataset (Summary runs still get the per-node columns and
// the staleness histogram, which every trace has); Full writes one /events row per event.
enum class EventLevel { None, Summary, Full };

// The level a resolved scenario's output.events names ("full", "summary"; anything else is
// none: the scenario loader has already refused other values).
inline EventLevel event_level_of(std::string_view name) {
  if (name == "full")
    return EventLevel::Full;
  if (name == "summary")
    return EventLevel::Summary;
  return EventLevel::None;
}

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
