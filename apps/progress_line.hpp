// SPDX-License-Identifier: MIT
// A one-line progress display for terminals (silent when output is a log).
#pragma once

#include "sim/engine/engine_config.hpp"

namespace dtsim::cli {

class ProgressLine {
public:
  explicit ProgressLine(bool enabled) : enabled_(enabled) {}
  void update(const Progress& p);
  void finish();

private:
  bool enabled_;
  bool drawn_ = false;
};

} // namespace dtsim::cli
