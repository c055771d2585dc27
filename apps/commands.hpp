// SPDX-License-Identifier: MIT
// The dtsim subcommands. Each returns the process exit code; ConfigError propagates to main.
#pragma once

#include <atomic>
#include <string>
#include <vector>

namespace dtsim::cli {

// Exit codes: 0 ok, 1 runtime failure, 2 configuration error, 3 run diverged,
// 130 interrupted.
int run_command(const std::vector<std::string>& args);
int validate_command(const std::vector<std::string>& args);
int list_command(const std::vector<std::string>& args);
int topology_command(const std::vector<std::string>& args);
int analyze_command(const std::vector<std::string>& args);
int sweep_command(const std::vector<std::string>& args);
// The same without signal handlers: setting *interrupt stops the sweep (no new point starts,
// running ones end as `interrupted`, which --resume reruns) and it returns 130. For hosts
// that own the signals (the Python module).
int sweep_command(const std::vector<std::string>& args, std::atomic<bool>* interrupt);
int report_command(const std::vector<std::string>& args);
int schema_command(const std::vector<std::string>& args);

} // namespace dtsim::cli
