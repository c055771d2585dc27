// SPDX-License-Identifier: MIT
// The dtsim executable: the command line with the built-in components.
#include "apps/cli_main.hpp"

int main(int argc, char** argv) {
  return dtsim::cli::main(argc, argv);
}
