// SPDX-License-Identifier: MIT
#include "sim/core/key_log.hpp"

#include <regex>

namespace dtsim {
namespace {
thread_local KeyLog* active_log = nullptr;
} // namespace

KeyLog::Scope::Scope(KeyLog& log) : previous_(active_log) {
  active_log = &log;
}

KeyLog::Scope::~Scope() {
  active_log = previous_;
}

bool KeyLog::active() {
  return active_log != nullptr;
}

void KeyLog::note(KeyRead read) {
  if (!active_log)
    return;
  // Every item of a list of maps declares the same keys: "failures[3]" -> "failures[]".
  static const std::regex index(R"(\[[0-9]+\])");
  read.path = std::regex_replace(read.path, index, "[]");
  active_log->reads_.push_back(std::move(read));
}

} // namespace dtsim
