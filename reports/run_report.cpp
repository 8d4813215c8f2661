#include "reports/run_report.hpp"

#include <fmt/format.h>

#include "reports/cluster_report.hpp"
#include "reports/link_report.hpp"
#include "reports/run_report_sections.hpp"
#include "sim/engine/session_metrics.hpp"
#include "sim/scenario/metrics_document.hpp"
#include "sim/serve/pipeline_metrics.hpp"

namespace kvsim {

std::string metrics_json_text(const RunMetrics& m) {
  return metrics_to_json(m).dump(2) + "\n";
}

namespace {
// `none` when no request completed: a latency of no request is no number.
std::string latency_line(const char* name, const LatencySummary& s, bool none) {
  if (none)
    return fmt::format("  {:<6} {:>9} {:>9} {:>9} {:>9} {:>9} {:>9} {:>9}\n", name, "none", "none",
                       "none", "none", "none", "none", "none");
  return fmt::format("  {:<6} {:>9.2f} {:>9.2f} {:>9.2f} {:>9.2f} {:>9.2f} {:>9.2f} {:>9.2f}\n",
                     name, s.mean, s.p50, s.p90, s.p95, s.p99, s.max, s.std);
}
}  // namespace

std::string goodput_line(const RunMetrics& m) {
  return fmt::format("goodput: {} requests met the SLO ({:.1f}% of arrivals), {:.3f} req/s",
                     m.goodput.requests, 100.0 * m.goodput.fraction, m.goodput.requests_per_s);
}

std::string numerics_verdict(const RunMetrics& m) {
  if (m.numerics.mode == "off") return "numerics: off (no K/V values checked)";
  return fmt::format(
      "numerics: {} mode, {} checks against the reference passed, max abs error {:.3g}",
      m.numerics.mode, m.numerics.checks, m.numerics.max_abs_err);
}

std::string summary_table(const ScenarioSpec& s, const RunMetrics& m) {
  std::string out;
  // The engine that ran says how its cache is shaped (blocks, or ctx_size buffers).
  const EngineReport& parts = engine_report(m);
  const std::string geometry = parts.summary_geometry(s);
  // tp devices per stage, then pipeline stages and data-parallel
  // attention ranks where there are several. A cluster: its groups.
  std::string devices = s.cluster ? ", " + cluster_deployment(s) : fmt::format(" x{}", s.tp);
  if (!s.cluster && s.pp > 1) devices += fmt::format(" x pp {}", s.pp);
  if (!s.cluster && s.dp > 1) devices += fmt::format(" x dp {}", s.dp);
  out += fmt::format("scenario {}  |  {} on {}{}  |  policy {} ({}, {})\n", m.scenario, m.model,
                     m.device, devices, m.policy, s.kv.dtype, geometry);
  out += fmt::format(
      "requests: {} arrived, {} completed, {} rejected, {} preempted ({} preemptions)\n",
      m.requests.arrived, m.requests.completed, m.requests.rejected, m.requests.preempted,
      m.requests.preemptions);
  out += fmt::format("  {:<6} {:>9} {:>9} {:>9} {:>9} {:>9} {:>9} {:>9}\n", "ms", "mean", "p50",
                     "p90", "p95", "p99", "max", "std");
  out += latency_line("TTFT", m.latency_ms.ttft, m.requests.completed == 0);
  out += latency_line("TPOT", m.latency_ms.tpot, m.requests.completed == 0);
  out += latency_line("ITL", m.latency_ms.itl, m.requests.completed == 0);
  out += latency_line("E2E", m.latency_ms.e2e, m.requests.completed == 0);
  out += fmt::format("throughput: {:.1f} output tok/s, {:.1f} total tok/s, {:.3f} req/s\n",
                     m.throughput.output_tokens_per_s, m.throughput.total_tokens_per_s,
                     m.throughput.requests_per_s);
  out += goodput_line(m);
  out += "\n";
  out += session_summary(m);
  out += parts.summary_lines(s, m);
  out += links_summary(m);
  if (m.numerics.mode != "off") {
    out += numerics_verdict(m);
    out += "\n";
  }
  out += fmt::format("simulated {:.1f} s in {} {}, {} events, {:.2f} s wall\n", m.sim.simulated_s,
                     m.sim.steps, parts.steps_word, m.sim.events, m.sim.wall_s);
  return out;
}

std::string run_report_markdown(const ScenarioSpec& s, const RunMetrics& m,
                                const PoolSizing& sizing, const std::string& warning) {
  const PipelineMetrics* pipeline = m.find<PipelineMetrics>();
  std::string out = fmt::format("# {}\n\n", m.scenario);
  if (!s.description.empty()) out += s.description + "\n\n";
  if (!warning.empty()) out += "> **" + warning + ".**\n\n";
  out += fmt::format("{} on {} ({}{}), policy `{}`, KV {} {}, seed {}.\n\n", m.model, m.device,
                     deployment_phrase(s),
                     s.pp > 1 && !s.cluster
                         ? fmt::format(", pipeline parallel {}: layers {}", s.pp,
                                       pipeline != nullptr ? pipeline->layers : std::string())
                         : std::string(),
                     m.policy, s.kv.dtype, engine_report(m).html_geometry(s), m.seed);
  out += s.cluster ? "## Memory plan (per device of instance 0)\n\n"
                   : "## Memory plan (per device)\n\n";
  out += "| item | bytes | |\n| --- | ---: | --- |\n";
  out += fmt::format("| device memory | {} | {} |\n", m.memory.device_bytes,
                     format_bytes(m.memory.device_bytes));
  out += fmt::format("| budget (x {}) | {} | {} |\n", s.kv.memory_fraction, sizing.budget,
                     format_bytes(sizing.budget));
  out += fmt::format("| weights | {} | {} |\n", sizing.weights_bytes,
                     format_bytes(sizing.weights_bytes));
  out += fmt::format("| activation reserve | {} | {} |\n", sizing.activation_reserve,
                     format_bytes(sizing.activation_reserve));
  out += engine_report(m).markdown(s, m, sizing);
  out += "## Summary\n\n```\n" + summary_table(s, m) + "```\n";
  out += "\n";
  out += numerics_verdict(m);
  out += ".\n";
  out +=
      "\nCharts (chosen by what the run contains) are in [report.html](report.html); the "
      "data is in timeline.csv and requests.csv.\n";
  return out;
}

}  // namespace kvsim
