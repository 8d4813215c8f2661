// kvsim hitcurve SCENARIO --capacity-tokens C1,C2,... [--out DIR] [--set KEY=VALUE]...
// The prefix-cache hit rate of the scenario's request stream at each cache
// capacity, from cache-only replays (no timing), as CSV, JSON, Markdown and
// HTML with a chart.
#include <fmt/format.h>

#include <chrono>
#include <iostream>
#include <memory>

#include "cli/commands.hpp"
#include "cli/studies/hitcurve.hpp"
#include "reports/input_error.hpp"
#include "reports/output_dir.hpp"

namespace kvsim::cli {
namespace {

struct HitCurveOptions {
  std::string scenario, out;
  std::vector<std::string> capacities;  // strings: "1e6" is accepted
  std::vector<std::string> sets;
  bool force = false;
};

// A capacity in tokens: a whole number, also written as 1e6 or 2.5e7.
int64_t parse_capacity(const std::string& text) {
  size_t used = 0;
  double value = 0;
  try {
    value = std::stod(text, &used);
  } catch (const std::exception&) {
    used = 0;
  }
  if (used != text.size() || !(value >= 1) || value > 1e15 ||
      value != static_cast<double>(static_cast<int64_t>(value))) {
    throw_input_error("--capacity-tokens", "capacity-tokens",
                      fmt::format("'{}' is not a whole number of tokens >= 1", text),
                      "e.g. 10000,1e6,1e8");
  }
  return static_cast<int64_t>(value);
}

int run_hitcurve(const HitCurveOptions& o) {
  std::vector<int64_t> capacities;
  for (const auto& c : o.capacities) capacities.push_back(parse_capacity(c));
  if (capacities.empty())
    throw_input_error("--capacity-tokens", "capacity-tokens", "no capacity given",
                      "e.g. 10000,1e6,1e8");
  const ScenarioSpec spec = load_scenario(o.scenario, o.sets);
  const auto start = std::chrono::steady_clock::now();
  HitCurve curve;
  try {
    curve = compute_hit_curve(spec, capacities);
  } catch (const std::invalid_argument& e) {
    throw_input_error(spec.file.empty() ? o.scenario : spec.file, "kv_cache.policy", e.what(),
                      "paged | chunk_lru");
  }
  const double wall_s =
      std::chrono::duration<double>(std::chrono::steady_clock::now() - start).count();
  const std::string out = o.out.empty() ? "out/hitcurve-" + safe_path_component(spec.name) : o.out;
  write_hit_curve(curve, out, o.force);
  std::cout << hit_curve_markdown(curve) << "\n"
            << fmt::format("{} replays in {:.2f} s\n", curve.points.size(), wall_s)
            << "report: " << out << "/ (hitcurve.csv, hitcurve.json, hitcurve.md, hitcurve.html)\n";
  return kExitOk;
}

}  // namespace

Command add_hitcurve_command(CLI::App& app) {
  auto o = std::make_shared<HitCurveOptions>();
  auto* cmd = app.add_subcommand(
      "hitcurve", "prefix-cache hit rate vs cache capacity (cache-only replay, no timing)");
  cmd->add_option("scenario", o->scenario, "scenario YAML file")->required();
  cmd->add_option("--capacity-tokens", o->capacities,
                  "cache capacities in tokens, comma separated (1e6 accepted)")
      ->required()
      ->delimiter(',');
  cmd->add_option("--out", o->out, "output folder (default out/hitcurve-<scenario name>)");
  cmd->add_flag("--force", o->force, "replace --out even if kvsim did not write it");
  cmd->add_option("--set", o->sets, "override a scenario key (repeatable)");
  return {cmd, [o] { return run_hitcurve(*o); }};
}

}  // namespace kvsim::cli
