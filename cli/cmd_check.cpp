// kvsim check METRICS.json --baseline BASE.json [--rel-tol X] [--abs-tol Y] [--keys PATTERN]
// Lists every difference; exit 1 when one is beyond tolerance, 2 when a file
// cannot be read or a metric changes type.
#include <fmt/format.h>

#include <iostream>
#include <memory>

#include "cli/commands.hpp"
#include "cli/number_checks.hpp"
#include "reports/input_error.hpp"
#include "reports/metrics_check.hpp"
#include "sim/core/metrics.hpp"

namespace kvsim::cli {
namespace {

struct CheckCliOptions {
  std::string metrics, baseline;
  std::vector<std::string> keys;
  MetricsCheckOptions check;
};

int run_check(const CheckCliOptions& o) {
  const auto metrics = read_metrics_file(o.metrics);
  const auto baseline = read_metrics_file(o.baseline);
  MetricsCheckOptions options = o.check;
  options.key_patterns = o.keys;
  const MetricsCheckResult r = check_metrics(metrics, baseline, options);
  // A metric that is a number in one file and a map, list or text in the
  // other is not a regression but two different kinds of document: the
  // input is at fault (exit 2), not the run (exit 1).
  for (const MetricDifference& d : r.differences) {
    const auto* v = find_metric(metrics, d.key);
    const auto* b = find_metric(baseline, d.key);
    if (v == nullptr || b == nullptr || v->is_null() || b->is_null()) continue;
    if (v->is_number() != b->is_number())
      throw_input_error(o.metrics, d.key,
                        fmt::format("is {} here and {} in the baseline {}", v->type_name(),
                                    b->type_name(), o.baseline),
                        "the same type in both files (a metrics.json written by kvsim run)");
  }
  std::cout << r.format(options);
  if (r.keys_compared == 0) {
    std::cerr << "kvsim: error: --keys: no key matches (keys are dotted, e.g. latency_ms.*)\n";
    return kExitBadInput;
  }
  return r.passed() ? kExitOk : kExitExpect;
}

}  // namespace

Command add_check_command(CLI::App& app) {
  auto o = std::make_shared<CheckCliOptions>();
  auto* cmd = app.add_subcommand("check", "compare a metrics.json with a baseline");
  cmd->add_option("metrics", o->metrics, "metrics.json of the run to check")->required();
  cmd->add_option("--baseline", o->baseline, "metrics.json to compare against")->required();
  cmd->add_option("--rel-tol", o->check.rel_tol, "relative tolerance (0.01 = 1%)")
      ->check(finite_range(0.0));
  cmd->add_option("--abs-tol", o->check.abs_tol, "absolute tolerance")->check(finite_range(0.0));
  cmd->add_option("--keys", o->keys,
                  "only keys matching these glob patterns, comma separated (latency_ms.*)")
      ->delimiter(',');
  return {cmd, [o] { return run_check(*o); }};
}

}  // namespace kvsim::cli
