// SPDX-License-Identifier: MIT
// The explicit list of built-in algorithms (no static self-registration).
#include "sim/optimizers/algorithm_setup.hpp"
#include "sim/optimizers/asgd.hpp"
#include "sim/optimizers/dc_asgd.hpp"
#include "sim/optimizers/dsgd.hpp"
#include "sim/optimizers/gsgm.hpp"
#include "sim/optimizers/ssgd.hpp"

namespace dtsim {

AlgorithmRegistry builtin_algorithms() {
  AlgorithmRegistry r;
  r.add("dsgd", "D-PSGD: local (momentum) SGD step + gossip averaging; mode sync|async",
        [](const Params& p, const AlgorithmSetup& s) { return std::make_unique<Dsgd>(p, s); });
  r.add("dsgdm", "DSGDm: dsgd with local heavy-ball momentum (default 0.9)",
        [](const Params& p, const AlgorithmSetup& s) {
          return std::make_unique<Dsgd>(p, s, Dsgd::dsgdm());
        });
  r.add("dsgdm-n", "DSGDm-N: dsgd with local Nesterov momentum (default 0.9)",
        [](const Params& p, const AlgorithmSetup& s) {
          return std::make_unique<Dsgd>(p, s, Dsgd::dsgdm_nesterov());
        });
  r.add("asgd", "asynchronous parameter server, stale gradients applied on arrival",
        [](const Params& p, const AlgorithmSetup& s) { return std::make_unique<Asgd>(p, s); });
  r.add("ssgd", "synchronous parameter server: one step per round on all n gradients",
        [](const Params& p, const AlgorithmSetup& s) { return std::make_unique<Ssgd>(p, s); });
  r.add("dc-asgd", "ASGD with delay compensation (constant or adaptive lambda)",
        [](const Params& p, const AlgorithmSetup& s) { return std::make_unique<DcAsgd>(p, s); });
  r.add("gsgm",
        "white-list scheduling + partly averaged gradients + global momentum (reconstruction)",
        [](const Params& p, const AlgorithmSetup& s) { return std::make_unique<Gsgm>(p, s); });
  return r;
}

} // namespace dtsim
