// SPDX-License-Identifier: MIT
// A dtsim with one more algorithm: registers it, then runs the usual command line, so that
// `my_dtsim run scenario.yaml` (and sweep, validate, list, schema) know `random-push`.
#include "apps/cli_main.hpp"
#include "random_push_gossip.hpp"

int main(int argc, char** argv) {
  dtsim::algorithm_registry().add("random-push",
                                  "example: async push of the model to one random neighbour",
                                  make_random_push_gossip);
  return dtsim::cli::main(argc, argv);
}
