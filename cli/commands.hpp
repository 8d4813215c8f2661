#pragma once
// kvsim subcommands (SPEC 3). Each lives in its own cmd_*.cpp: it declares
// its options on the app and returns what to run when it is chosen. main()
// parses, runs the chosen one and maps exceptions to exit codes.
#include <CLI/CLI.hpp>

#include "base/diagnostics.hpp"

#include <functional>
#include <string>
#include <vector>

namespace kvsim::cli {

constexpr int kExitOk = 0;
constexpr int kExitExpect = 1;    // an expectation or check failed
constexpr int kExitBadInput = 2;  // config, file or flag
constexpr int kExitInternal = 3;

struct Command {
  CLI::App* app = nullptr;   // the subcommand, to know whether it was chosen
  std::function<int()> run;  // may throw config::ConfigError (exit 2)
};

Command add_run_command(CLI::App& app);
Command add_validate_command(CLI::App& app);
Command add_list_command(CLI::App& app);
Command add_describe_command(CLI::App& app);  // cmd_validate.cpp
Command add_generate_command(CLI::App& app);
Command add_compare_command(CLI::App& app);    // cmd_compare.cpp
Command add_capacity_command(CLI::App& app);   // cmd_capacity.cpp
Command add_check_command(CLI::App& app);      // cmd_check.cpp
Command add_hitcurve_command(CLI::App& app);   // cmd_hitcurve.cpp
Command add_calibrate_command(CLI::App& app);  // cmd_calibrate.cpp
Command add_sweep_command(CLI::App& app);      // cmd_sweep.cpp
Command add_search_command(CLI::App& app);     // cmd_search.cpp

// Where device: and model: names resolve: ./configs when run from a
// checkout, else this build's source tree.
std::string configs_dir();

// Prints every diagnostic of a config error as `kvsim: error: ...`.
void print_config_error(const config::ConfigError& error);

}  // namespace kvsim::cli
