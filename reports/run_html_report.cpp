#include "reports/run_html_report.hpp"

#include <fmt/format.h>

#include "reports/cluster_report.hpp"
#include "reports/html_page.hpp"
#include "reports/link_report.hpp"
#include "reports/run_report.hpp"
#include "reports/run_report_sections.hpp"

namespace kvsim {
namespace {

std::vector<std::string> latency_row(const char* name, const LatencySummary& l, bool none) {
  if (none) return {name, "none", "none", "none", "none", "none", "none", "none"};
  return {name,
          fmt::format("{:.2f}", l.mean),
          fmt::format("{:.2f}", l.p50),
          fmt::format("{:.2f}", l.p90),
          fmt::format("{:.2f}", l.p95),
          fmt::format("{:.2f}", l.p99),
          fmt::format("{:.2f}", l.max),
          fmt::format("{:.2f}", l.std)};
}

}  // namespace

std::string run_report_html(const ScenarioSpec& s, const RunMetrics& m, const PoolSizing& sizing,
                            const RunSeries& series, ChartRenderer* charts,
                            const std::string& warning) {
  std::string body = "<h1>" + html_escape(m.scenario) + "</h1>\n";
  if (!s.description.empty()) body += "<p>" + html_escape(s.description) + "</p>\n";
  const EngineReport& parts = engine_report(m);
  const std::string geometry = parts.html_geometry(s);
  body += "<p>" +
          html_escape(fmt::format("{} on {} ({}), policy {}, KV {} {}, seed {}.", m.model, m.device,
                                  deployment_phrase(s), m.policy, s.kv.dtype, geometry, m.seed)) +
          "</p>\n";

  body += "<h2>Requests and latency</h2>\n";
  if (!warning.empty()) body += "<p class=\"warning\">" + html_escape(warning) + ".</p>\n";
  const bool none = m.requests.completed == 0;  // no request, no latency
  body +=
      html_table({"requests", "arrived", "completed", "rejected", "preempted", "preemptions"},
                 {{"count", std::to_string(m.requests.arrived),
                   std::to_string(m.requests.completed), std::to_string(m.requests.rejected),
                   std::to_string(m.requests.preempted), std::to_string(m.requests.preemptions)}});
  body += html_table(
      {"ms", "mean", "p50", "p90", "p95", "p99", "max", "std"},
      {latency_row("TTFT", m.latency_ms.ttft, none), latency_row("TPOT", m.latency_ms.tpot, none),
       latency_row("ITL", m.latency_ms.itl, none), latency_row("E2E", m.latency_ms.e2e, none)});
  body += html_table({"throughput", "output tokens/s", "total tokens/s", "requests/s"},
                     {{"", fmt::format("{:.1f}", m.throughput.output_tokens_per_s),
                       fmt::format("{:.1f}", m.throughput.total_tokens_per_s),
                       fmt::format("{:.3f}", m.throughput.requests_per_s)}});
  body += "<p>" + html_escape(goodput_line(m)) + ".</p>\n";
  body += "<p class=\"verdict\">" + html_escape(numerics_verdict(m)) + ".</p>\n";

  body += "<h2>Charts</h2>\n";
  body += render_figures_html(parts.charts(m, {m.scenario, &series}), charts);
  if (series.spans_dropped() > 0)
    body += fmt::format(
        "<p>The turn timeline keeps the run's first {} spans; {} later ones are "
        "in the totals only.</p>\n",
        RunSeries::kMaxSpans, series.spans_dropped());

  body += parts.html_tables(s, m, sizing);
  body += links_html(m);
  body += "<h2>Summary</h2>\n<pre>" + html_escape(summary_table(s, m)) + "</pre>\n";
  body += "<p>Files: metrics.json, requests.csv, timeline.csv, report.md.</p>\n";
  return html_document("kvsim: " + m.scenario, body);
}

}  // namespace kvsim
