// SPDX-License-Identifier: MIT
// Dense matrices of schedules and the schedule a `topology:` section names.
#include "topologies/mixing_schedule.hpp"

#include "topologies/one_peer_exponential.hpp"
#include "topologies/random_pairs.hpp"
#include "topologies/static_mixing.hpp"

namespace dtsim {

Eigen::MatrixXd MixingSchedule::matrix(std::int64_t round) const {
  const int n = size();
  Eigen::MatrixXd w = Eigen::MatrixXd::Zero(n, n);
  for (int i = 0; i < n; ++i) {
    const RoundMixing row = at(round, i);
    w(i, i) = row.self_weight;
    for (std::size_t k = 0; k < row.in.size(); ++k)
      w(i, row.in[k]) += row.weights[k];
  }
  return w;
}

std::unique_ptr<MixingSchedule> make_mixing_schedule(const Params& topology_params,
                                                     const Topology& topology, std::uint64_t seed) {
  // make_topology has validated the kind already; reading it again only looks it up.
  const std::string kind = topology_params.text("kind", "ring");
  if (kind == "one_peer_exponential")
    return std::make_unique<OnePeerExponential>(topology.size());
  if (kind == "random_pairs")
    return std::make_unique<RandomPairs>(topology.size(), seed);
  return std::make_unique<StaticMixing>(topology);
}

} // namespace dtsim
