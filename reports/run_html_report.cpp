#include "reports/run_html_report.hpp"

#include <fmt/format.h>

#include "reports/genie_report.hpp"
#include "reports/html_page.hpp"
#include "reports/run_charts.hpp"
#include "reports/run_report.hpp"

namespace kvsim {
namespace {

std::vector<std::string> latency_row(const char* name, const LatencySummary& l) {
  return {name,
          fmt::format("{:.2f}", l.mean),
          fmt::format("{:.2f}", l.p50),
          fmt::format("{:.2f}", l.p90),
          fmt::format("{:.2f}", l.p99),
          fmt::format("{:.2f}", l.max)};
}

std::vector<std::string> bytes_row(const std::string& name, Bytes b) {
  return {name, std::to_string(b), format_bytes(b)};
}

std::string paged_tables_html(const ScenarioSpec& s, const RunMetrics& m,
                              const PoolSizing& sizing) {
  std::string body = "<h2>KV cache</h2>\n";
  body += html_table({"metric", "value"},
                     {{"blocks", std::to_string(m.kv_cache.num_blocks)},
                      {"block bytes", format_bytes(m.kv_cache.block_bytes)},
                      {"capacity tokens", std::to_string(m.kv_cache.capacity_tokens)},
                      {"peak used", format_bytes(m.kv_cache.peak_used_bytes)},
                      {"mean used", format_bytes(static_cast<Bytes>(m.kv_cache.mean_used_bytes))},
                      {"prefix hit rate", fmt::format("{:.3f}", m.kv_cache.prefix_hit_rate)},
                      {"chunk hit rate", fmt::format("{:.3f}", m.kv_cache.chunk_hit_rate)},
                      {"fragmentation", fmt::format("{:.3f}", m.kv_cache.fragmentation)},
                      {"evictions", std::to_string(m.kv_cache.evictions)},
                      {"bytes moved", format_bytes(m.kv_cache.bytes_moved)},
                      {"swapped", format_bytes(m.kv_cache.swapped_bytes)}});
  body += "<h2>Memory plan (per device)</h2>\n";
  std::vector<std::vector<std::string>> rows = {
      bytes_row("device memory", m.memory.device_bytes),
      bytes_row(fmt::format("budget (x {})", s.cache.memory_fraction), sizing.budget),
      bytes_row("weights", sizing.weights_bytes),
      bytes_row("activation reserve", sizing.activation_reserve),
      bytes_row(fmt::format("KV pool ({} blocks x {})", sizing.num_blocks, sizing.block_bytes),
                m.memory.kv_bytes)};
  if (m.memory.chunk_pool_bytes > 0)
    rows.push_back(bytes_row("chunk pool", m.memory.chunk_pool_bytes));
  body += html_table({"item", "bytes", ""}, rows);
  return body;
}

// A dialog on an HTP has no block pool: Genie's fixed buffers, what the
// update mode moved, and who held how much VTCM (seed 002).
std::string genie_tables_html(const ScenarioSpec& s, const RunMetrics& m) {
  const auto& k = m.kv_cache;
  std::string body = "<h2>KV cache (Genie buffers)</h2>\n";
  const double useful_share = k.attention_read_tokens > 0
                                  ? static_cast<double>(k.attention_useful_tokens) /
                                        static_cast<double>(k.attention_read_tokens)
                                  : 0.0;
  body += html_table({"metric", "value"},
                     {{"ctx_size / tokens held at most",
                       fmt::format("{} / {}", s.cache.ctx_size, k.capacity_tokens)},
                      {"buffer bytes", format_bytes(k.buffer_bytes)},
                      {"peak used", format_bytes(k.peak_used_bytes)},
                      {"bytes moved", format_bytes(k.bytes_moved)},
                      {"pointer updates", std::to_string(k.pointer_updates)},
                      {"compactions", std::to_string(k.compactions)},
                      {"variant switches", std::to_string(k.variant_switches)},
                      {"rewinds", std::to_string(k.rewinds)},
                      {"window-evicted tokens", std::to_string(k.window_evicted_tokens)},
                      {"context resets", std::to_string(k.context_resets)},
                      {"attention columns read / useful",
                       fmt::format("{} / {} ({:.1f}%)", k.attention_read_tokens,
                                   k.attention_useful_tokens, 100.0 * useful_share)}});
  body += "<h2>VTCM sessions</h2>\n";
  std::vector<std::vector<std::string>> sessions;
  for (const auto& session : m.sessions) {
    sessions.push_back({session.name, format_bytes(session.vtcm_requested_bytes),
                        format_bytes(session.vtcm_granted_bytes),
                        fmt::format("{:.2f}", session.vtcm_wait_ms), std::to_string(session.runs)});
  }
  body += html_table({"session", "asked", "granted (smallest)", "waited ms", "runs"}, sessions);
  body += "<h2>Memory</h2>\n";
  body +=
      html_table({"item", "bytes", ""}, {bytes_row("device memory", m.memory.device_bytes),
                                         bytes_row("weights", m.memory.weights_bytes),
                                         bytes_row("KV buffers", m.memory.kv_bytes),
                                         bytes_row("VTCM (the LLM's grant)", m.memory.vtcm_bytes)});
  return body;
}

}  // namespace

std::string run_report_html(const ScenarioSpec& s, const RunMetrics& m, const PoolSizing& sizing,
                            const std::string& requests_csv, const std::string& timeline_csv) {
  std::string body = "<h1>" + html_escape(m.scenario) + "</h1>\n";
  if (!s.description.empty()) body += "<p>" + html_escape(s.description) + "</p>\n";
  const bool ondevice = is_genie_run(m);
  const std::string geometry =
      ondevice ? fmt::format("in Genie buffers of ctx_size {}", s.cache.ctx_size)
               : fmt::format("in blocks of {} tokens", s.cache.block_size);
  body +=
      "<p>" +
      html_escape(fmt::format("{} on {} (tensor parallel {}), policy {}, KV {} {}, seed {}.",
                              m.model, m.device, s.tp, m.policy, s.cache.dtype, geometry, m.seed)) +
      "</p>\n";

  body += "<h2>Requests and latency</h2>\n";
  body +=
      html_table({"requests", "arrived", "completed", "rejected", "preempted", "preemptions"},
                 {{"count", std::to_string(m.requests.arrived),
                   std::to_string(m.requests.completed), std::to_string(m.requests.rejected),
                   std::to_string(m.requests.preempted), std::to_string(m.requests.preemptions)}});
  body +=
      html_table({"ms", "mean", "p50", "p90", "p99", "max"},
                 {latency_row("TTFT", m.latency_ms.ttft), latency_row("TPOT", m.latency_ms.tpot),
                  latency_row("E2E", m.latency_ms.e2e)});
  body += html_table({"throughput", "output tokens/s", "total tokens/s", "requests/s"},
                     {{"", fmt::format("{:.1f}", m.throughput.output_tokens_per_s),
                       fmt::format("{:.1f}", m.throughput.total_tokens_per_s),
                       fmt::format("{:.3f}", m.throughput.requests_per_s)}});

  body += "<h2>Charts</h2>\n";
  const RunChartData data = read_run_chart_data(requests_csv, timeline_csv, m.scenario);
  const std::vector<RunChartData> runs = {data};
  body +=
      render_figures_html({{kv_memory_chart(runs), "KV memory in use over time (timeline.csv)"},
                           {queue_chart(runs), "Running / waiting requests (timeline.csv)"},
                           {ttft_cdf_chart(runs), "TTFT of completed requests (requests.csv)"},
                           {tpot_cdf_chart(runs), "TPOT of completed requests (requests.csv)"}});

  body += ondevice ? genie_tables_html(s, m) : paged_tables_html(s, m, sizing);
  body += "<h2>Summary</h2>\n<pre>" + html_escape(summary_table(s, m)) + "</pre>\n";
  body += "<p>Files: metrics.json, requests.csv, timeline.csv, report.md.</p>\n";
  return html_document("kvsim: " + m.scenario, body);
}

}  // namespace kvsim
