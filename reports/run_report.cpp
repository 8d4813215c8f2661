#include "reports/run_report.hpp"

#include <fmt/format.h>

#include "reports/genie_report.hpp"

namespace kvsim {

std::string metrics_json_text(const RunMetrics& m) {
  return metrics_to_json(m).dump(2) + "\n";
}

namespace {
std::string latency_line(const char* name, const LatencySummary& s) {
  return fmt::format("  {:<6} {:>10.2f} {:>10.2f} {:>10.2f} {:>10.2f} {:>10.2f}\n", name, s.mean,
                     s.p50, s.p90, s.p99, s.max);
}
}  // namespace

std::string summary_table(const ScenarioSpec& s, const RunMetrics& m) {
  std::string out;
  // On-device buffers are sized by ctx_size; blocks exist only in the paged family.
  const std::string geometry = is_genie_run(m) ? fmt::format("ctx_size {}", s.cache.ctx_size)
                                               : fmt::format("block {}", s.cache.block_size);
  out += fmt::format("scenario {}  |  {} on {} x{}  |  policy {} ({}, {})\n", m.scenario, m.model,
                     m.device, s.tp, m.policy, s.cache.dtype, geometry);
  out += fmt::format(
      "requests: {} arrived, {} completed, {} rejected, {} preempted ({} preemptions)\n",
      m.requests.arrived, m.requests.completed, m.requests.rejected, m.requests.preempted,
      m.requests.preemptions);
  out += fmt::format("  {:<6} {:>10} {:>10} {:>10} {:>10} {:>10}\n", "ms", "mean", "p50", "p90",
                     "p99", "max");
  out += latency_line("TTFT", m.latency_ms.ttft);
  out += latency_line("TPOT", m.latency_ms.tpot);
  out += latency_line("E2E", m.latency_ms.e2e);
  out += fmt::format("throughput: {:.1f} output tok/s, {:.1f} total tok/s, {:.3f} req/s\n",
                     m.throughput.output_tokens_per_s, m.throughput.total_tokens_per_s,
                     m.throughput.requests_per_s);
  if (is_genie_run(m)) {
    out += genie_summary_lines(s, m);
    out += fmt::format("simulated {:.1f} s in {} passes, {} events, {:.2f} s wall\n",
                       m.sim.simulated_s, m.sim.steps, m.sim.events, m.sim.wall_s);
    return out;
  }
  out += fmt::format(
      "KV cache: {} blocks x {} = {} ({} tokens); peak used {} ({:.1f}%), mean {}\n",
      m.kv_cache.num_blocks, format_bytes(m.kv_cache.block_bytes), format_bytes(m.memory.kv_bytes),
      m.kv_cache.capacity_tokens, format_bytes(m.kv_cache.peak_used_bytes),
      m.memory.kv_bytes > 0 ? 100.0 * static_cast<double>(m.kv_cache.peak_used_bytes) /
                                  static_cast<double>(m.memory.kv_bytes)
                            : 0.0,
      format_bytes(static_cast<Bytes>(m.kv_cache.mean_used_bytes)));
  out += fmt::format(
      "          prefix hit rate {:.3f}, fragmentation {:.3f}, evictions {}, swapped {}\n",
      m.kv_cache.prefix_hit_rate, m.kv_cache.fragmentation, m.kv_cache.evictions,
      format_bytes(m.kv_cache.swapped_bytes));
  out +=
      fmt::format("memory per device: {} total, weights {}, activations {}, KV {}\n",
                  format_bytes(m.memory.device_bytes), format_bytes(m.memory.weights_bytes),
                  format_bytes(m.memory.activation_reserve_bytes), format_bytes(m.memory.kv_bytes));
  out += fmt::format("simulated {:.1f} s in {} steps, {} events, {:.2f} s wall\n",
                     m.sim.simulated_s, m.sim.steps, m.sim.events, m.sim.wall_s);
  return out;
}

std::string run_report_markdown(const ScenarioSpec& s, const RunMetrics& m,
                                const PoolSizing& sizing) {
  std::string out = fmt::format("# {}\n\n", m.scenario);
  if (!s.description.empty()) out += s.description + "\n\n";
  out += fmt::format(
      "{} on {} (tensor parallel {}), policy `{}`, KV {} in blocks of {} tokens, seed {}.\n\n",
      m.model, m.device, s.tp, m.policy, s.cache.dtype, s.cache.block_size, m.seed);
  out += "## Memory plan (per device)\n\n| item | bytes | |\n| --- | ---: | --- |\n";
  out += fmt::format("| device memory | {} | {} |\n", m.memory.device_bytes,
                     format_bytes(m.memory.device_bytes));
  out += fmt::format("| budget (x {}) | {} | {} |\n", s.cache.memory_fraction, sizing.budget,
                     format_bytes(sizing.budget));
  out += fmt::format("| weights | {} | {} |\n", sizing.weights_bytes,
                     format_bytes(sizing.weights_bytes));
  out += fmt::format("| activation reserve | {} | {} |\n", sizing.activation_reserve,
                     format_bytes(sizing.activation_reserve));
  if (is_genie_run(m)) {
    out += fmt::format("| Genie KV buffers | {} | {} |\n\n", m.memory.kv_bytes,
                       format_bytes(m.memory.kv_bytes));
    out += genie_report_markdown(s, m);
  } else {
    out += fmt::format("| KV pool ({} blocks x {}) | {} | {} |\n\n", sizing.num_blocks,
                       sizing.block_bytes, m.memory.kv_bytes, format_bytes(m.memory.kv_bytes));
  }
  out += "## Summary\n\n```\n" + summary_table(s, m) + "```\n";
  out +=
      "\nCharts (KV memory and queue length over time, TTFT and TPOT CDFs) are in "
      "[report.html](report.html); the data is in timeline.csv and requests.csv.\n";
  return out;
}

}  // namespace kvsim
