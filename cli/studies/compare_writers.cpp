#include "cli/studies/compare_writers.hpp"

#include <fmt/format.h>

#include <cstdlib>

#include "base/units.hpp"
#include "reports/html_page.hpp"
#include "reports/run_charts.hpp"
#include "sim/scenario/metrics_document.hpp"

namespace kvsim {
namespace {

using Json = nlohmann::ordered_json;

// Values of every compare column per variant.
std::vector<std::vector<double>> column_values(const CompareResult& r) {
  std::vector<std::vector<double>> out;
  for (const auto& m : r.metrics) {
    const Json j = metrics_to_json(m);
    std::vector<double> row;
    for (const auto& c : compare_columns(r)) row.push_back(metric_value(j, c.key).value_or(0.0));
    out.push_back(std::move(row));
  }
  return out;
}

std::string number(double v) {
  if (v == static_cast<double>(static_cast<int64_t>(v)) && std::abs(v) < 1e15)
    return std::to_string(static_cast<int64_t>(v));
  return std::abs(v) >= 1000 ? fmt::format("{:.1f}", v) : fmt::format("{:.4g}", v);
}

// For files scripts read: the shortest text that reads back as the same
// double (the value in metrics.json), integers without a decimal point.
std::string full_precision(double v) {
  if (v == static_cast<double>(static_cast<int64_t>(v)) && std::abs(v) < 1e15)
    return std::to_string(static_cast<int64_t>(v));
  return fmt::format("{}", v);
}

// For the human tables: byte columns with units.
std::string display(const CompareColumn& c, double v) {
  if (c.key.ends_with("bytes") || c.key.ends_with("bytes_moved"))
    return format_bytes(static_cast<Bytes>(v));
  return number(v);
}

std::string ratio_text(const std::optional<double>& r) {
  return r ? fmt::format("{:.3f}x", *r) : std::string("-");
}

bool all_numeric(const std::vector<std::string>& values) {
  for (const auto& v : values) {
    char* end = nullptr;
    std::strtod(v.c_str(), &end);
    if (end == v.c_str() || *end != '\0') return false;
  }
  return true;
}

// One axis of offered load (a key naming a rate, such as
// workload.arrival.rate_per_s, with numeric values): latency against the
// throughput each load reached, the curve a serving study reads capacity
// from.
std::optional<CaptionedChart> rate_curve(const CompareResult& r,
                                         const std::vector<VaryAxis>& axes) {
  if (axes.size() != 1 || !all_numeric(axes[0].values) || r.metrics.size() < 2) return std::nullopt;
  // The key's last part names a rate: rate_per_s (workload.arrival's), a
  // trace's rate_scale.
  const std::string& key = axes[0].key;
  if (!key.substr(key.find_last_of('.') + 1).starts_with("rate")) return std::nullopt;
  ChartSpec c;
  c.title = "Latency against throughput along " + axes[0].key;
  c.x_label = "throughput (requests/s)";
  c.y_label = "ms";
  ChartSeries p50{"TTFT p50", {}, {}, {}}, p99{"TTFT p99", {}, {}, {}},
      tpot{"TPOT p99", {}, {}, {}};
  for (const auto& m : r.metrics) {
    const double x = m.throughput.requests_per_s;
    p50.x.push_back(x);
    p50.y.push_back(m.latency_ms.ttft.p50);
    p99.x.push_back(x);
    p99.y.push_back(m.latency_ms.ttft.p99);
    tpot.x.push_back(x);
    tpot.y.push_back(m.latency_ms.tpot.p99);
  }
  c.series = {p50, p99, tpot};
  std::string caption = "One point per " + axes[0].key + " (";
  for (size_t i = 0; i < axes[0].values.size(); ++i) caption += (i ? ", " : "") + axes[0].values[i];
  return CaptionedChart{c, caption + "), in that order"};
}

// With numerics.reuse_quality: each variant's output drift from a full
// prefill against its TTFT, the trade a cache option makes.
std::optional<CaptionedChart> quality_against_ttft(const CompareResult& r,
                                                   const std::vector<CompareVariant>& variants) {
  ChartSpec c;
  c.kind = ChartSpec::Kind::points;
  c.title = "Output drift from a full prefill against TTFT";
  c.x_label = "TTFT p50 (ms)";
  c.y_label = "logits mean |diff|";
  for (size_t i = 0; i < r.metrics.size(); ++i) {
    const auto j = metrics_to_json(r.metrics[i]);
    const auto drift = metric_value(j, "reuse_quality.logits_mean_abs_diff");
    if (!drift) continue;
    c.series.push_back({variants[i].short_label, {r.metrics[i].latency_ms.ttft.p50}, {*drift}, {}});
  }
  if (c.series.size() < 2) return std::nullopt;
  return CaptionedChart{c,
                        "One point per variant: down is closer to a full prefill's output "
                        "(numerics.reuse_quality), left is a faster first token"};
}

}  // namespace

std::optional<double> compare_ratio(double value, double first) {
  if (first == 0.0) return std::nullopt;
  return value / first;
}

void write_compare_files(OutputDir& dir, const ScenarioSpec& base, const CompareResult& result,
                         const std::vector<VaryAxis>& axes, const std::vector<std::string>& sets) {
  const auto columns = compare_columns(result);
  const auto values = column_values(result);

  // compare.json
  Json j;
  j["scenario"] = base.name;
  j["sets"] = sets;
  j["vary"] = Json::array();
  for (const auto& a : axes) j["vary"].push_back({{"key", a.key}, {"values", a.values}});
  j["ratios_against"] = result.variants.front().label;
  j["variants"] = Json::array();
  for (size_t i = 0; i < result.variants.size(); ++i) {
    Json v;
    v["label"] = result.variants[i].label;
    v["folder"] = result.variants[i].folder;
    v["sets"] = result.variants[i].sets;
    for (size_t c = 0; c < columns.size(); ++c) v["metrics"][columns[c].key] = values[i][c];
    for (size_t c = 0; c < columns.size(); ++c) {
      const auto r = compare_ratio(values[i][c], values[0][c]);
      v["ratio"][columns[c].key] = r ? Json(*r) : Json(nullptr);
    }
    j["variants"].push_back(v);
  }
  // Variants whose values do not go together: not run, with the reason.
  j["rejected"] = Json::array();
  for (const auto& r : result.rejected)
    j["rejected"].push_back(
        {{"label", r.variant.label}, {"sets", r.variant.sets}, {"reason", r.reason}});
  write_file_atomically(dir.file("compare.json"), j.dump(2) + "\n");

  // compare.csv: values, then ratio.<key> columns, at full precision, one
  // row per variant in grid order; with variants not run, a last column
  // `rejected` gives why (their value cells are empty).
  const std::vector<CompareRow> rows = compare_rows(result);
  const bool any_rejected = !result.rejected.empty();
  std::string csv = "variant,folder";
  for (const auto& c : columns) csv += fmt::format(",{}", c.key);
  for (const auto& c : columns) csv += fmt::format(",ratio.{}", c.key);
  csv += any_rejected ? ",rejected\n" : "\n";
  for (const CompareRow& row : rows) {
    if (!row.ran) {
      csv += csv_cell(row.variant->label) + ",," + std::string(2 * columns.size(), ',') +
             csv_cell(*row.reason) + "\n";
      continue;
    }
    const size_t i = *row.ran;
    csv += fmt::format("{},{}", csv_cell(result.variants[i].label),
                       csv_cell(result.variants[i].folder));
    for (size_t c = 0; c < columns.size(); ++c)
      csv += fmt::format(",{}", full_precision(values[i][c]));
    for (size_t c = 0; c < columns.size(); ++c) {
      const auto r = compare_ratio(values[i][c], values[0][c]);
      csv += r ? fmt::format(",{}", full_precision(*r)) : std::string(",");
    }
    csv += any_rejected ? ",\n" : "\n";
  }
  write_file_atomically(dir.file("compare.csv"), csv);

  // Tables shared by the Markdown and the HTML: values, then ratios.
  std::vector<std::string> headers = {"variant"};
  for (const auto& c : columns) headers.push_back(c.title);
  if (any_rejected) headers.push_back("not run");
  std::vector<std::vector<std::string>> value_rows, ratio_rows;
  for (const CompareRow& row : rows) {
    std::vector<std::string> vr = {row.variant->label}, rr = {row.variant->label};
    for (size_t c = 0; c < columns.size(); ++c) {
      vr.push_back(row.ran ? display(columns[c], values[*row.ran][c]) : "-");
      rr.push_back(row.ran ? ratio_text(compare_ratio(values[*row.ran][c], values[0][c])) : "-");
    }
    if (any_rejected) {
      vr.push_back(row.reason != nullptr ? *row.reason : "");
      rr.push_back(row.reason != nullptr ? *row.reason : "");
    }
    value_rows.push_back(std::move(vr));
    ratio_rows.push_back(std::move(rr));
  }
  std::string set_text;
  for (const auto& s : sets) set_text += (set_text.empty() ? "" : " ") + s;
  const std::string intro = fmt::format(
      "{} variants of scenario {} ({} on {}, seed {}){}{}. Every variant replays the same "
      "request stream unless a varied key changes the workload or the seed; chat turns "
      "after the first arrive a think time after the previous reply, so their arrival "
      "times follow each variant's latency.",
      rows.size(), base.name, base.model.name, base.device.name, base.seed,
      set_text.empty() ? "" : ", with " + set_text,
      any_rejected ? fmt::format("; {} not run, their values do not go together (the table says "
                                 "why)",
                                 result.rejected.size())
                   : "");

  std::string md = "# Comparison: " + base.name + "\n\n" + intro + "\n\n## Values\n\n" +
                   markdown_table(headers, value_rows) + "\n## Ratios against " +
                   result.variants.front().label + "\n\n" + markdown_table(headers, ratio_rows) +
                   "\nRun folders: ";
  for (size_t i = 0; i < result.variants.size(); ++i)
    md += (i ? ", " : "") + fmt::format("[{0}]({0}/report.md)", result.variants[i].folder);
  md += ".\n\nCharts are in [compare.html](compare.html).\n";
  write_file_atomically(dir.file("compare.md"), md);

  // compare.html: bars of the metrics that differ most (ratios against the
  // first variant), a latency-throughput curve along a rate axis, then the
  // lines of every variant over time from the series each streamed.
  std::vector<LabelledSeries> runs;
  for (size_t i = 0; i < result.series.size(); ++i)
    runs.push_back({result.variants[i].short_label, &result.series[i]});
  std::vector<CaptionedChart> charts;
  for (const size_t c : most_different_columns(result, 4)) {
    const bool bytes = columns[c].key.ends_with("bytes") || columns[c].key.ends_with("bytes_moved");
    std::vector<std::pair<std::string, double>> bars;
    for (size_t i = 0; i < values.size(); ++i)
      bars.push_back({result.variants[i].short_label,
                      bytes ? values[i][c] / (1024.0 * 1024.0 * 1024.0) : values[i][c]});
    std::string caption = columns[c].title + " per variant";
    for (size_t i = 1; i < values.size(); ++i)
      caption += fmt::format("; {} {}", result.variants[i].short_label,
                             ratio_text(compare_ratio(values[i][c], values[0][c])));
    charts.push_back(
        {bar_chart(columns[c].title, bytes ? "GiB" : columns[c].title, bars), caption});
  }
  if (const auto curve = rate_curve(result, axes)) charts.push_back(*curve);
  if (const auto quality = quality_against_ttft(result, result.variants))
    charts.push_back(*quality);
  if (enough_for_cdf(runs)) {
    charts.push_back({ttft_cdf_chart(runs), "TTFT CDF per variant"});
    charts.push_back({tpot_cdf_chart(runs), "TPOT CDF per variant"});
  } else {
    charts.push_back({per_request_ttft_chart(runs), "TTFT of each request (turn) per variant"});
  }
  charts.push_back({kv_memory_chart(runs), "KV memory in use per variant"});
  const ChartSpec moved = bytes_moved_chart(runs);
  if (chart_has_signal(moved))
    charts.push_back({moved, "KV bytes moved by cache updates per variant"});
  const ChartSpec waiting = queue_chart(runs);
  if (chart_has_signal(waiting)) charts.push_back({waiting, "Waiting requests per variant"});

  std::string body =
      "<h1>Comparison: " + html_escape(base.name) + "</h1>\n<p>" + html_escape(intro) + "</p>\n";
  if (!base.description.empty()) body += "<p>" + html_escape(base.description) + "</p>\n";
  body += "<h2>Values</h2>\n<div class=\"wide\">" + html_table(headers, value_rows) + "</div>\n";
  body += "<h2>Ratios against " + html_escape(result.variants.front().label) + "</h2>\n" +
          "<div class=\"wide\">" + html_table(headers, ratio_rows) + "</div>\n";
  body += "<h2>Charts</h2>\n" + render_figures_html(charts);
  body += "<h2>Run folders</h2>\n<ul>\n";
  for (const auto& v : result.variants)
    body += "<li><a href=\"" + html_escape(v.folder) + "/report.html\">" + html_escape(v.label) +
            "</a></li>\n";
  body += "</ul>\n";
  write_file_atomically(dir.file("compare.html"),
                        html_document("kvsim compare: " + base.name, body));
}

}  // namespace kvsim
