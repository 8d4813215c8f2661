// kvsim validate FILE..., kvsim list devices|models|scenarios|KIND [--params],
// kvsim describe NAME
#include <fmt/format.h>

#include <algorithm>
#include <filesystem>
#include <fstream>
#include <iostream>
#include <memory>

#include "base/source_paths.hpp"
#include "cli/commands.hpp"
#include "cli/studies/sweep.hpp"
#include "cli/studies/sweep_spec.hpp"
#include "sim/scenario/component_catalog.hpp"
#include "sim/scenario/scenario.hpp"

namespace kvsim::cli {

std::string configs_dir() {
  std::error_code ec;
  return std::filesystem::is_directory("configs/devices", ec) ? "configs" : KVSIM_CONFIG_DIR;
}

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

// `name  what it is`, the names in one column; names alone with `names_only`.
void print_rows(const std::vector<std::pair<std::string, std::string>>& rows,
                bool names_only = false) {
  size_t width = 0;
  for (const auto& r : rows) width = std::max(width, r.first.size());
  for (const auto& [name, what] : rows) {
    if (names_only || what.empty())
      std::cout << name << "\n";
    else
      std::cout << fmt::format("{:<{}}  {}\n", name, width, what);
  }
}

// The top-level `description:` of a config file (its one line), without
// parsing the file: listing must not fail on a file that does not load.
std::string config_description(const std::string& configs, const std::string& kind,
                               const std::string& name) {
  for (const char* ext : {".yaml", ".json"}) {
    std::ifstream in(std::filesystem::path(configs) / kind / (name + ext));
    if (!in) continue;
    for (std::string line; std::getline(in, line);) {
      if (!line.starts_with("description:")) continue;
      std::string d = line.substr(12);
      d.erase(0, d.find_first_not_of(" \t"));
      if (d.size() >= 2 && (d.front() == '"' || d.front() == '\'') && d.back() == d.front())
        d = d.substr(1, d.size() - 2);
      return d;
    }
  }
  return "";
}

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
    bool names = false;
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
  cmd->add_flag("--names", o->names, "names only, one a line (for scripts)");
  cmd->add_flag("--markdown", o->markdown,
                "with --params: the blocks docs/yaml.md holds, between their markers (all kinds "
                "when no kind is given)");
  return {cmd, [o] {
            const auto catalog = component_catalog();
            if (o->what.empty()) {
              if (!o->params || !o->markdown) {
                // What there is to list, each with what it holds.
                std::vector<std::pair<std::string, std::string>> rows = {
                    {"devices", "device files under configs/devices"},
                    {"models", "model files under configs/models"},
                    {"scenarios", "scenarios under configs/scenarios"}};
                for (const auto& kind : catalog) rows.push_back({kind.name, kind.doc});
                std::cout << "kvsim list KIND (--params: parameter tables; --names: bare names):\n";
                print_rows(rows);
                return kExitOk;
              }
              for (const auto& kind : catalog)
                for (const auto& info : kind.infos) print_component(info, true);
              return kExitOk;
            }
            std::vector<std::pair<std::string, std::string>> rows;
            for (const auto& kind : catalog) {
              if (kind.name != o->what) continue;
              for (const auto& info : kind.infos) {
                if (o->params)
                  print_component(info, o->markdown);
                else if (info.kind != "section")
                  rows.push_back({info.name, info.doc});
              }
              if (!o->params) print_rows(rows, o->names);
              return kExitOk;
            }
            const std::string configs = configs_dir();
            for (const auto& n : list_config_names(configs, o->what))
              rows.push_back({n, config_description(configs, o->what, n)});
            print_rows(rows, o->names);
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
