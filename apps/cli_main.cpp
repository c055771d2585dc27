// SPDX-License-Identifier: MIT
// dtsim command line: the subcommands of kUsage.
#include "apps/cli_main.hpp"

#include "apps/command_help.hpp"
#include "apps/commands.hpp"
#include "cuda/cuda_backend.hpp"
#include "sim/core/build_info.hpp"
#include "sim/core/errors.hpp"
#include "sim/core/params.hpp"

#include <algorithm>
#include <iostream>
#include <new>
#include <string>
#include <vector>

namespace {

constexpr const char* kUsage =
    R"(dtsim - discrete-event simulator of asynchronous decentralized training

usage:
  dtsim run SCENARIO.yaml [-o OUT.h5] [--set key=value]... [--threads N] [--quiet]
  dtsim sweep SWEEP.yaml [-o DIR] [--jobs N] [--resume] [--shard K/N] [--dry-run]
  dtsim validate SCENARIO.yaml... [--set key=value]...
  dtsim list
  dtsim schema [scenario|sweep]
  dtsim topology KIND --nodes N [--seed S] [--set key=value]...
  dtsim analyze TRACE.h5... | DIR [--by key,...] [--csv OUT [-q]] [--markdown] [--target ACC]
                [--at-time S] [--columns c1,c2,...] [--baseline key=value,...]
  dtsim report SWEEP_DIR [-o OUT.md] [--by label] [--vs nodes] [--target ACC]
  dtsim --version

dtsim COMMAND --help describes a command's options.
exit codes: 0 ok, 1 runtime failure, 2 configuration error, 3 run diverged, 130 interrupted
)";

} // namespace

int dtsim::cli::main(int argc, char** argv) {
  std::vector<std::string> args(argv + 1, argv + argc);
  if (args.empty() || args[0] == "-h" || args[0] == "--help" || args[0] == "help") {
    std::cout << kUsage;
    return args.empty() ? 2 : 0;
  }
  if (args[0] == "--version") {
    const dtsim::BuildInfo& b = dtsim::build_info();
    std::cout << "dtsim " << b.version << "\ncommit: " << b.commit << "\ncompiler: " << b.compiler
              << "\nmarch: " << (b.march.empty() ? "(compiler default)" : b.march)
              << "\nisa: " << b.isa << "\ncuda backend: "
              << (!dtsim::cuda::built_with_cuda()             ? "not built"
                  : dtsim::cuda::unavailable_reason().empty() ? "built, device found"
                                                              : "built, no device")
              << "\n";
    return 0;
  }
  const std::string command = args[0];
  args.erase(args.begin());
  if (std::find(args.begin(), args.end(), "--help") != args.end() ||
      std::find(args.begin(), args.end(), "-h") != args.end()) {
    const std::string help = dtsim::cli::command_help(command);
    if (!help.empty()) {
      std::cout << help;
      return 0;
    }
  }
  try {
    if (command == "run")
      return dtsim::cli::run_command(args);
    if (command == "validate")
      return dtsim::cli::validate_command(args);
    if (command == "list")
      return dtsim::cli::list_command(args);
    if (command == "topology")
      return dtsim::cli::topology_command(args);
    if (command == "sweep")
      return dtsim::cli::sweep_command(args);
    if (command == "analyze")
      return dtsim::cli::analyze_command(args);
    if (command == "report")
      return dtsim::cli::report_command(args);
    if (command == "schema")
      return dtsim::cli::schema_command(args);
    const std::vector<std::string> commands = {"run",   "validate", "list",   "topology",
                                               "sweep", "analyze",  "report", "schema"};
    const std::string guess = dtsim::closest_name(command, commands);
    std::cerr << "error: unknown command '" << command << "'"
              << (guess.empty() ? "" : " (did you mean '" + guess + "'?)")
              << "; see dtsim --help\n";
    return 2;
  } catch (const dtsim::ConfigError& e) {
    std::cerr << "error: " << e.what() << "\n";
    return 2;
  } catch (const std::bad_alloc&) {
    // The plan refuses what it knows to be too large; this is what slipped past it.
    std::cerr << "dtsim: failed: out of host memory (std::bad_alloc): use fewer nodes or a "
                 "smaller model\n";
    return 1;
  } catch (const std::exception& e) {
    std::cerr << "dtsim: failed: " << e.what() << "\n";
    return 1;
  }
}
