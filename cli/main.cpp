// kvsim command line (SPEC 3). Exit codes: 0 ok; 1 an expectation failed;
// 2 bad input (config, file, flag); 3 internal error.
#include <filesystem>
#include <iostream>
#include <string>

#include "base/build_info.hpp"
#include "base/checked_math.hpp"
#include "cli/commands.hpp"
#include "cli/studies/failure_class.hpp"
#include "reports/output_dir.hpp"
#include "sim/serve/step_observer.hpp"

int main(int argc, char** argv) {
  using namespace kvsim::cli;
  using kvsim::FailureClass;
  using kvsim::tell_failure_class;
  // A sweep's worker: dies with its parent and tells it why it failed
  // (cli/studies/failure_class.hpp).
  kvsim::adopt_worker_parent();
  CLI::App app{"kvsim: a discrete-event simulator of KV-cache behaviour on NPUs"};
  app.require_subcommand(1);
  app.set_version_flag("--version", std::string("kvsim ") + kvsim::build_info::version() +
                                        " (commit " + kvsim::build_info::commit() + ")");
  // One line per subcommand; each is defined in its own cmd_*.cpp.
  const std::vector<Command> commands = {
      add_run_command(app),      add_validate_command(app), add_list_command(app),
      add_generate_command(app), add_compare_command(app),  add_capacity_command(app),
      add_check_command(app),    add_hitcurve_command(app), add_calibrate_command(app),
      add_sweep_command(app),    add_search_command(app),   add_describe_command(app),
  };

  // No command at all: what the commands are, each with its one line.
  if (argc == 1) {
    std::cout << app.help();
    return kExitOk;
  }
  // A first word that is no command: say so and list them (CLI11 would only
  // say that a subcommand is required).
  if (argc > 1 && argv[1][0] != '-') {
    const std::string word = argv[1];
    std::string names;
    bool known = false;
    for (const CLI::App* sub : app.get_subcommands([](CLI::App*) { return true; })) {
      known = known || sub->get_name() == word;
      names += (names.empty() ? "" : ", ") + sub->get_name();
    }
    if (!known) {
      std::cerr << "kvsim: error: unknown command '" << word << "'; commands are " << names << "\n";
      return kExitBadInput;
    }
  }

  try {
    app.parse(argc, argv);
  } catch (const CLI::CallForHelp& e) {
    return app.exit(e);
  } catch (const CLI::CallForAllHelp& e) {
    return app.exit(e);
  } catch (const CLI::CallForVersion& e) {
    return app.exit(e);
  } catch (const CLI::ParseError& e) {
    std::cerr << "kvsim: error: " << e.what() << "\n";
    tell_failure_class(FailureClass::internal);  // a worker's command line is kvsim's own
    return kExitBadInput;
  }

  try {
    for (const Command& c : commands) {
      if (*c.app) return c.run();
    }
  } catch (const kvsim::config::ConfigError& e) {
    print_config_error(e);
    tell_failure_class(FailureClass::invalid_configuration);
    return kExitBadInput;
  } catch (const kvsim::CheckFailed& e) {
    std::cerr << "kvsim: check failed: " << e.what() << "\n";
    return kExitExpect;
  } catch (const kvsim::OutputRefused& e) {
    std::cerr << "kvsim: error: " << e.what() << "\n";
    tell_failure_class(FailureClass::environment);  // what is at the path, not the scenario
    return kExitBadInput;
  } catch (const std::filesystem::filesystem_error& e) {
    // An output folder that cannot be created or written (permissions, a
    // full disk) is the environment's fault: exit 2 with the OS's text.
    std::cerr << "kvsim: error: " << e.path1().string() << ": " << e.code().message() << "\n";
    tell_failure_class(FailureClass::environment);
    return kExitBadInput;
  } catch (const kvsim::UnrepresentableQuantity& e) {
    // A quantity the input made too large to hold (an op's duration): the
    // input is at fault, though no file position is known any more.
    std::cerr << "kvsim: error: " << e.what() << "\n";
    tell_failure_class(FailureClass::invalid_configuration);
    return kExitBadInput;
  } catch (const std::bad_alloc&) {
    // The machine's memory, not the input: exit 2 with what to do.
    std::cerr << "kvsim: error: out of memory (free memory, or make the run smaller)\n";
    tell_failure_class(FailureClass::environment);
    return kExitBadInput;
  } catch (const std::exception& e) {
    std::cerr << "kvsim: internal error: " << e.what() << "\n";
    tell_failure_class(FailureClass::internal);
    return kExitInternal;
  }
  return kExitInternal;
}
