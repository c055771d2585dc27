// SPDX-License-Identifier: MIT
// The explicit list of built-in algorithms (no static self-registration).
#include "sim/optimizers/ad_psgd.hpp"
#include "sim/optimizers/algorithm_setup.hpp"
#include "sim/optimizers/asgd.hpp"
#include "sim/optimizers/choco_sgd.hpp"
#include "sim/optimizers/d2.hpp"
#include "sim/optimizers/dc_asgd.hpp"
#include "sim/optimizers/decentlam.hpp"
#include "sim/optimizers/dsgd.hpp"
#include "sim/optimizers/gradient_tracking.hpp"
#include "sim/optimizers/gsgm.hpp"
#include "sim/optimizers/momentum_tracking.hpp"
#include "sim/optimizers/qg_dsgdm.hpp"
#include "sim/optimizers/ssgd.hpp"
#include "sim/optimizers/swarm_sgd.hpp"

namespace dtsim {

namespace {

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
  r.add("qg-dsgdm", "QG-DSGDm: quasi-global momentum from the model displacement after gossip",
        [](const Params& p, const AlgorithmSetup& s) {
          return std::make_unique<QgDsgdm>(p, s, false);
        });
  r.add("qg-dsgdm-n", "QG-DSGDm-N: quasi-global momentum, Nesterov form",
        [](const Params& p, const AlgorithmSetup& s) {
          return std::make_unique<QgDsgdm>(p, s, true);
        });
  r.add("d2", "D2: decentralized SGD corrected for data heterogeneity (sync, fixed W)",
        [](const Params& p, const AlgorithmSetup& s) { return std::make_unique<D2>(p, s); });
  r.add("gradient-tracking", "DSGD with gradient tracking; gossips model and tracker (sync)",
        [](const Params& p, const AlgorithmSetup& s) {
          return std::make_unique<GradientTracking>(p, s);
        });
  r.add("momentum-tracking", "Momentum Tracking: tracks the network-average momentum (sync)",
        [](const Params& p, const AlgorithmSetup& s) {
          return std::make_unique<MomentumTracking>(p, s);
        });
  r.add("decentlam", "DecentLaM: momentum on the gossip-step displacement",
        [](const Params& p, const AlgorithmSetup& s) { return std::make_unique<DecentLam>(p, s); });
  r.add("asgd", "asynchronous parameter server, stale gradients applied on arrival",
        [](const Params& p, const AlgorithmSetup& s) { return std::make_unique<Asgd>(p, s); });
  r.add("ssgd", "synchronous parameter server: one step per round on all n gradients",
        [](const Params& p, const AlgorithmSetup& s) { return std::make_unique<Ssgd>(p, s); });
  r.add("dc-asgd", "ASGD with delay compensation (constant or adaptive lambda)",
        [](const Params& p, const AlgorithmSetup& s) { return std::make_unique<DcAsgd>(p, s); });
  r.add("gsgm",
        "white-list scheduling + partly averaged gradients + global momentum (reconstruction)",
        [](const Params& p, const AlgorithmSetup& s) { return std::make_unique<Gsgm>(p, s); });
  r.add("ad-psgd", "asynchronous gossip: atomic averaging with one random neighbour, stale step",
        [](const Params& p, const AlgorithmSetup& s) { return std::make_unique<AdPsgd>(p, s); });
  r.add("swarm-sgd", "local steps + quantized pairwise averaging, non-blocking partners",
        [](const Params& p, const AlgorithmSetup& s) { return std::make_unique<SwarmSgd>(p, s); });
  r.add("choco-sgd", "gossip on compressed differences with public estimates, step gamma",
        [](const Params& p, const AlgorithmSetup& s) { return std::make_unique<ChocoSgd>(p, s); });
  return r;
}

} // namespace

AlgorithmRegistry& algorithm_registry() {
  static AlgorithmRegistry registry = builtin_algorithms();
  return registry;
}

} // namespace dtsim
