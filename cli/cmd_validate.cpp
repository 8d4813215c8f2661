// kvsim validate FILE..., kvsim list devices|models|scenarios|KIND [--params],
// kvsim describe NAME
#include <filesystem>
#include <iostream>
#include <memory>

#include "base/source_paths.hpp"
#include "cli/commands.hpp"
#include "cli/studies/sweep.hpp"
#include "cli/studies/sweep_spec.hpp"
#include "sim/scenario/component_catalog.hpp"
#include "sim/scenario/scenario.hpp"

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
                // A sweep or search file (configs/sweeps/) has its own reader;
                // every variant's grid keys are loaded as a sweep would.
                if (std::filesystem::path(f).parent_path().filename() == "sweeps") {
                  check_sweep_loads(load_sweep(f, /*allow_search=*/true));
                } else {
                  validate_file(f);
                }
                std::cout << f << ": ok\n";
              } catch (const config::ConfigError& e) {
                print_config_error(e);
                rc = kExitBadInput;
              }
            }
            return rc;
          }};
}

namespace {

void print_component(const config::ComponentInfo& info, bool markdown) {
  if (markdown) {
    std::cout << "<!-- params:" << catalog_marker_key(info) << " -->\n";
  } else {
    std::cout << info.name << " (" << info.kind << "): " << info.doc << "\n\n";
  }
  std::cout << config::params_markdown(info);
  if (markdown) std::cout << "<!-- /params -->";
  std::cout << "\n";
}

}  // namespace

Command add_list_command(CLI::App& app) {
  struct Options {
    std::string what;
    bool params = false;
    bool markdown = false;
  };
  auto o = std::make_shared<Options>();
  std::vector<std::string> kinds = {"devices", "models", "scenarios"};
  for (const auto& k : component_catalog()) kinds.push_back(k.name);
  auto* cmd = app.add_subcommand(
      "list", "list devices, models, scenarios, or components (policies, engines, ...)");
  cmd->add_option(
         "what", o->what,
         "devices|models|scenarios|" +
             [&] {
               std::string s;
               for (const auto& k : component_catalog()) s += (s.empty() ? "" : "|") + k.name;
               return s;
             }())
      ->check(CLI::IsMember(kinds));
  cmd->add_flag("--params", o->params, "print each component's parameter table");
  cmd->add_flag("--markdown", o->markdown,
                "with --params: the blocks docs/yaml.md holds, between their markers (all kinds "
                "when no kind is given)");
  return {cmd, [o] {
            const auto catalog = component_catalog();
            if (o->what.empty()) {
              if (!o->params || !o->markdown) {
                std::cerr << "kvsim: error: list: say what to list (or --params --markdown)\n";
                return kExitBadInput;
              }
              for (const auto& kind : catalog)
                for (const auto& info : kind.infos) print_component(info, true);
              return kExitOk;
            }
            for (const auto& kind : catalog) {
              if (kind.name != o->what) continue;
              for (const auto& info : kind.infos) {
                if (o->params)
                  print_component(info, o->markdown);
                else if (info.kind != "section")
                  std::cout << info.name << "\n";
              }
              return kExitOk;
            }
            // Names under ./configs when run from a checkout, else this build's tree.
            std::string configs = KVSIM_CONFIG_DIR;
            std::error_code ec;
            if (std::filesystem::is_directory("configs/devices", ec)) configs = "configs";
            for (const auto& n : list_config_names(configs, o->what)) std::cout << n << "\n";
            return kExitOk;
          }};
}

Command add_describe_command(CLI::App& app) {
  auto name = std::make_shared<std::string>();
  auto* cmd = app.add_subcommand("describe", "print one component's parameters");
  cmd->add_option("name", *name, "a component: paged, chat, poisson, genie, ...")->required();
  return {cmd, [name] {
            std::vector<std::string> all;
            int found = 0;
            for (const auto& kind : component_catalog()) {
              for (const auto& info : kind.infos) {
                all.push_back(info.name);
                if (info.name != *name) continue;
                if (found++ > 0) std::cout << "\n";
                print_component(info, false);
              }
            }
            if (found > 0) return kExitOk;
            const std::string near = config::closest_match(*name, all);
            std::cerr << "kvsim: error: describe: no component named '" << *name << "'"
                      << (near.empty() ? "" : ", did you mean '" + near + "'?") << "\n";
            return kExitBadInput;
          }};
}

}  // namespace kvsim::cli
