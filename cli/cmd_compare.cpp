// kvsim compare SCENARIO --vary KEY=V1,V2[,...] [--vary ...] [--variant "LABEL: K=V; K=V"]...
//                [--out DIR] [--set KEY=VALUE]...
// Runs every variant of the grid on the same request stream and writes the
// side-by-side comparison (SPEC 3).
#include <fmt/format.h>
#include <unistd.h>

#include <algorithm>
#include <cmath>
#include <iostream>
#include <memory>

#include "cli/commands.hpp"
#include "cli/studies/compare_report.hpp"
#include "reports/input_error.hpp"
#include "reports/output_dir.hpp"
#include "sim/scenario/metrics_document.hpp"
#include "sim/scenario/scenario.hpp"

namespace kvsim::cli {
namespace {

struct CompareOptions {
  std::string scenario, out;
  std::vector<std::string> vary, variants, sets;
  bool quiet = false;
  bool force = false;
};

int run_compare_command(const CompareOptions& o) {
  if (o.vary.empty() && o.variants.empty())
    throw_input_error("--vary", "vary", "no variant to run",
                      "--vary KEY=V1,V2[,...] or --variant \"LABEL: KEY=VALUE[; ...]\"");
  std::vector<VaryAxis> axes;
  if (!o.variants.empty()) axes.push_back(parse_named_variants(o.variants));
  for (const auto& v : o.vary) axes.push_back(parse_vary(v));
  check_vary_axes(axes);  // before anything is loaded
  std::string out = o.out;
  if (out.empty())
    out = "out/compare-" + safe_path_component(load_scenario(o.scenario, o.sets).name);
  const size_t total = expand_variants(axes).size();
  // A variant whose values do not go together (a model that does not fit, a
  // layout it cannot take) is a row saying why; only when every variant is
  // such is the grid an error (exit 2).
  const bool show = !o.quiet && isatty(STDERR_FILENO);
  const CompareResult r = run_compare(
      o.scenario, o.sets, axes, out,
      [&](size_t i, const std::string& label) {
        if (show) std::cerr << fmt::format("kvsim: variant {}/{}: {}\n", i + 1, total, label);
      },
      o.force);
  if (!o.quiet) {
    const auto cols = compare_columns(r);
    // TTFT and TPOT p99 and output tokens/s always, then the columns that
    // differ most between the variants (bytes moved for update modes, hit
    // rates for cache policies, ...).
    std::vector<size_t> shown = {1, 3, 5};
    // A run that measured its output drift (numerics.reuse_quality) shows
    // it beside the latencies: the trade a cache option makes.
    const auto first = metrics_to_json(r.metrics[0]);
    for (size_t c = 0; c < cols.size(); ++c)
      if (cols[c].key.starts_with("reuse_quality.") && metric_value(first, cols[c].key))
        shown.push_back(c);
    const size_t limit = shown.size() + 3;
    for (const size_t c : most_different_columns(r, 6)) {
      if (shown.size() >= limit) break;
      if (std::find(shown.begin(), shown.end(), c) == shown.end()) shown.push_back(c);
    }
    size_t width = 8;
    const std::vector<CompareRow> rows = compare_rows(r);
    for (const auto& row : rows) width = std::max(width, row.variant->label.size());
    std::cout << fmt::format("{:<{}}", "variant", width);
    for (const size_t c : shown) std::cout << fmt::format(" {:>18}", cols[c].title);
    std::cout << "\n";
    for (const CompareRow& row : rows) {
      std::cout << fmt::format("{:<{}}", row.variant->label, width);
      if (!row.ran) {  // its values do not go together: not run
        std::cout << " not run: " << *row.reason << "\n";
        continue;
      }
      const auto j = metrics_to_json(r.metrics[*row.ran]);
      const auto j0 = metrics_to_json(r.metrics[0]);
      for (const size_t c : shown) {
        const double v = metric_value(j, cols[c].key).value_or(0);
        const double v0 = metric_value(j0, cols[c].key).value_or(0);
        const std::string ratio = v0 != 0 ? fmt::format(" ({:.2f}x)", v / v0) : "";
        const std::string value =
            cols[c].key.ends_with("bytes") || cols[c].key.ends_with("bytes_moved")
                ? format_bytes(static_cast<Bytes>(v))
            : std::abs(v) >= 1000 ? fmt::format("{:.0f}", v)
                                  : fmt::format("{:.4g}", v);
        std::cout << fmt::format(" {:>18}", value + ratio);
      }
      std::cout << "\n";
    }
    std::cout << "report: " << r.folder
              << "/ (compare.json, compare.csv, compare.md, compare.html, one folder per "
                 "variant)\n";
  }
  // The grid ran (exit 0) when one variant did; the others' rows say why not.
  if (!r.rejected.empty())
    std::cerr << fmt::format(
        "kvsim: note: {} of {} variants not run: their values do not go together (compare.md "
        "says why)\n",
        r.rejected.size(), r.rejected.size() + r.variants.size());
  return kExitOk;
}

}  // namespace

Command add_compare_command(CLI::App& app) {
  auto o = std::make_shared<CompareOptions>();
  auto* cmd = app.add_subcommand("compare", "run variants of a scenario side by side");
  cmd->add_option("scenario", o->scenario, "scenario YAML file")->required();
  cmd->add_option("--vary", o->vary,
                  "KEY=V1,V2,...: one axis of the grid (repeatable; ratios against the first)");
  cmd->add_option("--variant", o->variants,
                  "\"LABEL: KEY=VALUE[; KEY=VALUE...]\": one named variant (repeatable; "
                  "together they are the first axis)");
  cmd->add_option("--out", o->out, "output folder (default out/compare-<scenario name>)");
  cmd->add_option("--set", o->sets, "override a key in every variant (repeatable)");
  cmd->add_flag("--quiet", o->quiet, "print nothing but errors");
  cmd->add_flag("--force", o->force, "replace --out even if kvsim did not write it");
  return {cmd, [o] { return run_compare_command(*o); }};
}

}  // namespace kvsim::cli
