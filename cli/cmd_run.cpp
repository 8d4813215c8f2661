// kvsim run SCENARIO [--out DIR] [--set KEY=VALUE]... [--trace FILE.json] [--quiet] [--no-expect]
// kvsim run --from out/x/metrics.json (or out/x/scenario.resolved.yaml)
#include <fmt/format.h>
#include <unistd.h>

#include <chrono>
#include <iostream>
#include <memory>

#include "cli/commands.hpp"
#include "cli/studies/run_folder.hpp"
#include "cli/studies/run_provenance.hpp"
#include "reports/input_error.hpp"
#include "reports/output_dir.hpp"
#include "reports/run_report.hpp"
#include "sim/scenario/expect.hpp"
#include "sim/scenario/metrics_document.hpp"

namespace kvsim::cli {
namespace {

struct RunOptions {
  std::string scenario, from, out, trace;
  std::vector<std::string> sets;
  bool quiet = false;
  bool force = false;
  bool no_expect = false;
};

// A progress line on stderr, at most twice a second, only on a terminal (SPEC 3).
class ProgressLine {
 public:
  void operator()(const RunProgress& p) {
    const auto now = std::chrono::steady_clock::now();
    if (now - last_ < std::chrono::milliseconds(500)) return;
    last_ = now;
    printed_ = true;
    // A cluster's running and waiting requests sum over its instances.
    const std::string where = p.instances > 1 ? fmt::format(" on {} instances", p.instances) : "";
    std::cerr << fmt::format(
                     "\rkvsim: {} completed, {} rejected of {} arrived; {} running, {} waiting{}; "
                     "simulated {:.1f} s   ",
                     p.completed, p.rejected, p.arrived, p.running, p.waiting, where,
                     static_cast<double>(p.simulated) / 1e9)
              << std::flush;
  }
  ~ProgressLine() {
    if (printed_) std::cerr << "\n";
  }

 private:
  std::chrono::steady_clock::time_point last_ = std::chrono::steady_clock::now();
  bool printed_ = false;
};

// The scenario and its provenance: from a file and --set, or from a run
// folder's metrics.json / scenario.resolved.yaml (`--from`).
Reproduction load_run(const RunOptions& o) {
  if (o.scenario.empty() == o.from.empty())
    throw_input_error("run", "", "give a scenario file or --from (exactly one of them)",
                      "kvsim run SCENARIO.yaml, or kvsim run --from out/NAME/metrics.json");
  if (!o.from.empty()) {
    if (!o.sets.empty())
      throw_input_error("--set", "",
                        "cannot be combined with --from (the run is repeated as it was)",
                        "kvsim run SCENARIO --set ..., or --from alone");
    return load_reproduction(o.from);
  }
  Reproduction r;
  r.spec = load_scenario(o.scenario, o.sets);
  r.provenance = describe_scenario(o.scenario, o.sets);
  return r;
}

int run(const RunOptions& o) {
  const Reproduction loaded = load_run(o);
  const ScenarioSpec& spec = loaded.spec;
  const std::string out = o.out.empty() ? "out/" + safe_path_component(spec.name) : o.out;
  RunFolderResult result;
  if (!o.quiet && isatty(STDERR_FILENO)) {
    auto line = std::make_shared<ProgressLine>();
    result = run_into_folder(
        spec, out, [line](const RunProgress& p) { (*line)(p); }, o.force, &loaded.provenance,
        o.trace);
  } else {
    result = run_into_folder(spec, out, {}, o.force, &loaded.provenance, o.trace);
  }
  if (!o.quiet) {
    std::cout << summary_table(spec, result.metrics);
    if (const std::string w = overload_warning(result.load); !w.empty()) std::cout << w << "\n";
    std::cout << "report: " << result.folder
              << "/ (metrics.json, requests.csv, timeline.csv, report.md, report.html, "
                 "scenario.resolved.yaml)\n";
    if (!o.trace.empty())
      std::cout << "trace: " << o.trace << " (open in ui.perfetto.dev or chrome://tracing)\n";
  }
  if (o.no_expect) return kExitOk;  // the run itself succeeded
  const auto failures = check_expectations(spec.expect, metrics_to_json(result.metrics));
  for (const auto& f : failures) std::cerr << "kvsim: expect failed: " << f << "\n";
  if (!failures.empty()) return kExitExpect;
  if (!o.quiet && !spec.expect.empty())
    std::cout << "expect: " << spec.expect.size() << " checks passed\n";
  return kExitOk;
}

}  // namespace

Command add_run_command(CLI::App& app) {
  auto o = std::make_shared<RunOptions>();
  auto* cmd = app.add_subcommand("run", "run a scenario and write its report");
  cmd->add_option("scenario", o->scenario, "scenario YAML file");
  cmd->add_option("--from", o->from,
                  "rerun a run folder's scenario: its metrics.json or scenario.resolved.yaml");
  cmd->add_option("--out", o->out, "output folder (default out/<scenario name>)");
  cmd->add_option("--set", o->sets, "override a key: --set kv_cache.block_size=64 (repeatable)");
  cmd->add_option("--trace", o->trace,
                  "also write the run as Chrome trace-event JSON (ui.perfetto.dev, "
                  "chrome://tracing): requests, steps, KV transfers, VTCM waits")
      ->type_name("FILE.json");
  cmd->add_flag("--quiet", o->quiet, "print nothing but errors");
  cmd->add_flag("--no-expect", o->no_expect,
                "skip the scenario's expect block (exit 0 unless the run fails)");
  cmd->add_flag("--force", o->force,
                "replace a user's folder at --out (a user's file at --trace) kvsim did not write; "
                "never a device, FIFO, socket, link or an input of the run");
  return {cmd, [o] { return run(*o); }};
}

}  // namespace kvsim::cli
