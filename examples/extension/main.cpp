// SPDX-License-Identifier: MIT
// A dtsim with one more algorithm, compressor and model: registers them, then runs the usual
// command line, so that `my_dtsim run scenario.yaml` (and sweep, validate, list, schema) know
// `random-push`, `compressor: {kind: ternary}` and `model: {kind: tanh-mlp}`.
#include "apps/cli_main.hpp"
#include "random_push_gossip.hpp"
#include "tanh_mlp.hpp"
#include "ternary_compressor.hpp"

int main(int argc, char** argv) {
  dtsim::algorithm_registry().add("random-push",
                                  "example: async push of the model to one random neighbour",
                                  make_random_push_gossip);
  dtsim::compressor_registry().add("ternary", "example: stochastic ternary, 2 bits a coordinate",
                                   make_ternary_compressor);
  dtsim::model_registry().add("tanh-mlp", "example: one tanh hidden layer (keys: hidden)",
                              make_tanh_mlp);
  return dtsim::cli::main(argc, argv);
}
