// SPDX-License-Identifier: MIT
// KeyLog: a record of every configuration key read through Params (path, type, default,
// range, allowed names), so that `dtsim schema` can describe the scenario format from the very
// reads that validate it instead of from a second, hand-kept list.
#pragma once

#include "sim/core/params.hpp"

#include <optional>
#include <string>
#include <vector>

namespace dtsim {

struct KeyRead {
  // Dotted path from the file's root; list items appear as "[]" ("system.failures[].start_s").
  std::string path;
  KeyType type = KeyType::text;
  std::optional<std::string> default_value; // as written back into the resolved scenario
  Range range;                              // number, integer, numbers
  std::vector<std::string> choices;         // choice
  std::string value;                        // choice: the name read (probes tell cases apart)
};

// Collects the reads made on this thread while a KeyLog::Scope is alive. A thread-local hook
// rather than a parameter: the reads happen inside every component's constructor, and
// threading a logger through all of them would widen every factory signature for one command.
class KeyLog {
public:
  class Scope {
  public:
    explicit Scope(KeyLog& log);
    ~Scope();
    Scope(const Scope&) = delete;
    Scope& operator=(const Scope&) = delete;

  private:
    KeyLog* previous_;
  };

  // Called by Params when active(): records one read in the innermost active Scope's log.
  static bool active();
  static void note(KeyRead read);

  const std::vector<KeyRead>& reads() const { return reads_; }

private:
  std::vector<KeyRead> reads_;
};

} // namespace dtsim
