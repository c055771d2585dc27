// SPDX-License-Identifier: MIT
// The dtsim command line as a function, so that a program can add its own components to the
// registries (algorithm_registry(), compressor_registry(), order_registry(),
// model_registry()) and then run the usual CLI with them: see docs/extending.md.
#pragma once

namespace dtsim::cli {

// Runs `dtsim ARGS...` (argv[0] is the program name) and returns the exit code.
int main(int argc, char** argv);

} // namespace dtsim::cli
