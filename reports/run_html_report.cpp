#include "reports/run_html_report.hpp"

#include <fmt/format.h>

#include "reports/html_page.hpp"
#include "reports/run_charts.hpp"
#include "reports/run_report.hpp"
#include "reports/run_report_sections.hpp"

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

}  // namespace

std::string run_report_html(const ScenarioSpec& s, const RunMetrics& m, const PoolSizing& sizing,
                            const std::string& requests_csv, const std::string& timeline_csv) {
  std::string body = "<h1>" + html_escape(m.scenario) + "</h1>\n";
  if (!s.description.empty()) body += "<p>" + html_escape(s.description) + "</p>\n";
  const EngineReport& parts = engine_report(m);
  const std::string geometry = parts.html_geometry(s);
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

  body += parts.html_tables(s, m, sizing);
  body += "<h2>Summary</h2>\n<pre>" + html_escape(summary_table(s, m)) + "</pre>\n";
  body += "<p>Files: metrics.json, requests.csv, timeline.csv, report.md.</p>\n";
  return html_document("kvsim: " + m.scenario, body);
}

}  // namespace kvsim
