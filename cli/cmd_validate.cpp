// kvsim validate FILE...  and  kvsim list devices|models|policies|scenarios
#include <filesystem>
#include <iostream>
#include <memory>

#include "base/source_paths.hpp"
#include "cli/commands.hpp"
#include "sim/cache/policy_registry.hpp"
#include "sim/scenario.hpp"

namespace kvsim::cli {

void print_config_error(const config::ConfigError& e) {
  for (const auto& d : e.diagnostics()) std::cerr << "kvsim: error: " << d.format() << "\n";
}

Command add_validate_command(CLI::App& app) {
  auto files = std::make_shared<std::vector<std::string>>();
  auto* cmd = app.add_subcommand("validate", "check scenario, device or model files");
  cmd->add_option("files", *files, "YAML files")->required();
  return {cmd, [files] {
            int rc = kExitOk;
            for (const auto& f : *files) {
              try {
                validate_file(f);
                std::cout << f << ": ok\n";
              } catch (const config::ConfigError& e) {
                print_config_error(e);
                rc = kExitBadInput;
              }
            }
            return rc;
          }};
}

Command add_list_command(CLI::App& app) {
  auto what = std::make_shared<std::string>();
  auto* cmd = app.add_subcommand("list", "list devices, models, policies or scenarios");
  cmd->add_option("what", *what, "devices|models|policies|scenarios")
      ->required()
      ->check(CLI::IsMember({"devices", "models", "policies", "scenarios"}));
  return {cmd, [what] {
            // Names under ./configs when run from a checkout, else this build's tree.
            std::string configs = KVSIM_CONFIG_DIR;
            std::error_code ec;
            if (std::filesystem::is_directory("configs/devices", ec)) configs = "configs";
            const auto names =
                *what == "policies" ? cache_policy_names() : list_config_names(configs, *what);
            for (const auto& n : names) std::cout << n << "\n";
            return kExitOk;
          }};
}

}  // namespace kvsim::cli
