// SPDX-License-Identifier: MIT
// The explicit list of built-in algorithms (no static self-registration).
#include "sim/optimizers/algorithm_setup.hpp"
#include "sim/optimizers/asgd.hpp"
#include "sim/optimizers/dsgd.hpp"

namespace dtsim {

AlgorithmRegistry builtin_algorithms() {
  AlgorithmRegistry r;
  r.add("dsgd", "D-PSGD: local (momentum) SGD step + gossip averaging; mode sync|async",
        [](const Params& p, const AlgorithmSetup& s) { return std::make_unique<Dsgd>(p, s); });
  r.add("asgd", "asynchronous parameter server, stale gradients applied on arrival",
        [](const Params& p, const AlgorithmSetup& s) { return std::make_unique<Asgd>(p, s); });
  return r;
}

} // namespace dtsim
