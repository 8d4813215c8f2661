// kvsim command line (SPEC 3). Exit codes: 0 ok; 1 an expectation failed;
// 2 bad input (config, file, flag); 3 internal error.
#include <fmt/format.h>
#include <CLI/CLI.hpp>

#include <unistd.h>

#include <chrono>
#include <cstdio>
#include <filesystem>
#include <iostream>

#include "reports/csv_sink.hpp"
#include "reports/output_dir.hpp"
#include "reports/run_report.hpp"
#include "sim/cache/policy_registry.hpp"
#include "sim/scenario.hpp"
#include "sim/expect.hpp"
#include "sim/serve/engine.hpp"

namespace {

constexpr int kExitOk = 0;
constexpr int kExitExpect = 1;
constexpr int kExitBadInput = 2;
constexpr int kExitInternal = 3;

void print_config_error(const kvsim::config::ConfigError& e) {
  for (const auto& d : e.diagnostics()) std::cerr << "kvsim: error: " << d.format() << "\n";
}

int cmd_run(const std::string& scenario_path, const std::string& out_flag,
            const std::vector<std::string>& sets, bool quiet) {
  const kvsim::ScenarioSpec spec = kvsim::load_scenario(scenario_path, sets);
  const std::string out = out_flag.empty() ? "out/" + spec.name : out_flag;
  kvsim::OutputDir dir(out);
  kvsim::CsvRunSink sink(dir.file("requests.csv"), dir.file("timeline.csv"));
  kvsim::ServingEngine engine(spec, &sink);
  // Progress on stderr for long runs, only when it is a terminal (SPEC 3).
  const bool show_progress = !quiet && isatty(STDERR_FILENO);
  auto last_print = std::chrono::steady_clock::now();
  bool printed = false;
  if (show_progress) {
    engine.set_progress([&](const kvsim::RunProgress& p) {
      const auto now = std::chrono::steady_clock::now();
      if (now - last_print < std::chrono::milliseconds(500)) return;
      last_print = now;
      printed = true;
      std::cerr << fmt::format(
                       "\rkvsim: {} completed, {} rejected of {} arrived; {} running, {} waiting; "
                       "simulated {:.1f} s   ",
                       p.completed, p.rejected, p.arrived, p.running, p.waiting,
                       static_cast<double>(p.simulated) / 1e9)
                << std::flush;
    });
  }
  const kvsim::RunMetrics metrics = engine.run();
  if (printed) std::cerr << "\n";
  sink.close();
  kvsim::write_file_atomically(dir.file("metrics.json"), kvsim::metrics_json_text(metrics));
  kvsim::write_file_atomically(dir.file("report.md"),
                               kvsim::run_report_markdown(spec, metrics, engine.sizing()));
  dir.commit();
  if (!quiet) {
    std::cout << kvsim::summary_table(spec, metrics);
    std::cout << "report: " << dir.final_path()
              << "/ (metrics.json, requests.csv, timeline.csv, report.md)\n";
  }
  const auto failures = kvsim::check_expectations(spec.expect, kvsim::metrics_to_json(metrics));
  for (const auto& f : failures) std::cerr << "kvsim: expect failed: " << f << "\n";
  if (!failures.empty()) return kExitExpect;
  if (!quiet && !spec.expect.empty())
    std::cout << "expect: " << spec.expect.size() << " checks passed\n";
  return kExitOk;
}

int cmd_validate(const std::vector<std::string>& files) {
  int rc = kExitOk;
  for (const auto& f : files) {
    try {
      kvsim::validate_file(f);
      std::cout << f << ": ok\n";
    } catch (const kvsim::config::ConfigError& e) {
      print_config_error(e);
      rc = kExitBadInput;
    }
  }
  return rc;
}

int cmd_list(const std::string& what) {
  std::string configs = KVSIM_CONFIG_DIR;
  std::error_code ec;
  if (std::filesystem::is_directory("configs/devices", ec)) configs = "configs";
  std::vector<std::string> names;
  if (what == "policies") {
    names = kvsim::cache_policy_names();
  } else {
    names = kvsim::list_config_names(configs, what);
  }
  for (const auto& n : names) std::cout << n << "\n";
  return kExitOk;
}

}  // namespace

int main(int argc, char** argv) {
  CLI::App app{"kvsim: a discrete-event simulator of KV-cache behaviour on NPUs"};
  app.require_subcommand(1);

  std::string scenario, out;
  std::vector<std::string> sets;
  bool quiet = false;
  auto* run = app.add_subcommand("run", "run a scenario and write its report");
  run->add_option("scenario", scenario, "scenario YAML file")->required();
  run->add_option("--out", out, "output folder (default out/<scenario name>)");
  run->add_option("--set", sets, "override a key: --set kv_cache.block_size=64 (repeatable)");
  run->add_flag("--quiet", quiet, "print nothing but errors");

  std::vector<std::string> files;
  auto* validate = app.add_subcommand("validate", "check scenario, device or model files");
  validate->add_option("files", files, "YAML files")->required();

  std::string what;
  auto* list = app.add_subcommand("list", "list devices, models, policies or scenarios");
  list->add_option("what", what, "devices|models|policies|scenarios")
      ->required()
      ->check(CLI::IsMember({"devices", "models", "policies", "scenarios"}));

  try {
    app.parse(argc, argv);
  } catch (const CLI::CallForHelp& e) {
    return app.exit(e);
  } catch (const CLI::CallForAllHelp& e) {
    return app.exit(e);
  } catch (const CLI::ParseError& e) {
    std::cerr << "kvsim: error: " << e.what() << "\n";
    return kExitBadInput;
  }

  try {
    if (*run) return cmd_run(scenario, out, sets, quiet);
    if (*validate) return cmd_validate(files);
    if (*list) return cmd_list(what);
  } catch (const kvsim::config::ConfigError& e) {
    print_config_error(e);
    return kExitBadInput;
  } catch (const std::filesystem::filesystem_error& e) {
    // An output folder that cannot be created or replaced is a bad --out.
    std::cerr << "kvsim: error: " << e.path1().string() << ": " << e.code().message() << "\n";
    return kExitBadInput;
  } catch (const std::exception& e) {
    std::cerr << "kvsim: internal error: " << e.what() << "\n";
    return kExitInternal;
  }
  return kExitInternal;
}
