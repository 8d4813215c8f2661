#include "reports/run_charts.hpp"

#include <cstdlib>
#include <fstream>
#include <map>
#include <sstream>

#include "reports/html_page.hpp"

namespace kvsim {
namespace {

std::vector<std::string> split_csv_line(const std::string& line) {
  std::vector<std::string> out;
  std::string cell;
  std::stringstream in(line);
  while (std::getline(in, cell, ',')) out.push_back(cell);
  if (!line.empty() && line.back() == ',') out.emplace_back();
  return out;
}

// Calls `row` with a column-name -> cell lookup for every data row.
template <typename F>
void for_each_row(const std::string& path, F row) {
  std::ifstream in(path);
  std::string line;
  if (!std::getline(in, line)) return;
  const auto header = split_csv_line(line);
  std::map<std::string, size_t> index;
  for (size_t i = 0; i < header.size(); ++i) index[header[i]] = i;
  while (std::getline(in, line)) {
    const auto cells = split_csv_line(line);
    auto cell = [&](const std::string& name) -> std::string {
      const auto it = index.find(name);
      return it == index.end() || it->second >= cells.size() ? std::string() : cells[it->second];
    };
    row(cell);
  }
}

double to_double(const std::string& s) {
  return s.empty() ? 0.0 : std::strtod(s.c_str(), nullptr);
}

ChartSeries series(const std::string& label, const std::vector<double>& x,
                   const std::vector<double>& y) {
  return ChartSeries{label, x, y};
}

}  // namespace

RunChartData read_run_chart_data(const std::string& requests_csv, const std::string& timeline_csv,
                                 std::string label) {
  RunChartData d;
  d.label = std::move(label);
  for_each_row(timeline_csv, [&](const auto& cell) {
    d.time_s.push_back(to_double(cell("time_ms")) / 1e3);
    d.kv_used_gib.push_back(to_double(cell("kv_used_bytes")) / (1024.0 * 1024.0 * 1024.0));
    d.running.push_back(to_double(cell("running")));
    d.waiting.push_back(to_double(cell("waiting")));
    d.swapped.push_back(to_double(cell("swapped")));
  });
  for_each_row(requests_csv, [&](const auto& cell) {
    if (cell("status") != "completed") return;
    if (!cell("ttft_ms").empty()) d.ttft_ms.push_back(to_double(cell("ttft_ms")));
    if (!cell("tpot_ms").empty()) d.tpot_ms.push_back(to_double(cell("tpot_ms")));
  });
  return d;
}

ChartSpec kv_memory_chart(const std::vector<RunChartData>& runs) {
  ChartSpec c;
  c.title = "KV cache memory in use (per device)";
  c.x_label = "simulated time (s)";
  c.y_label = "GiB";
  for (const auto& r : runs) c.series.push_back(series(r.label, r.time_s, r.kv_used_gib));
  return c;
}

ChartSpec queue_chart(const std::vector<RunChartData>& runs) {
  ChartSpec c;
  c.kind = ChartSpec::Kind::steps;
  c.title = "Queue length";
  c.x_label = "simulated time (s)";
  c.y_label = "requests";
  if (runs.size() == 1) {
    c.series.push_back(series("running", runs[0].time_s, runs[0].running));
    c.series.push_back(series("waiting", runs[0].time_s, runs[0].waiting));
    bool any_swapped = false;
    for (const double s : runs[0].swapped) any_swapped = any_swapped || s > 0;
    if (any_swapped) c.series.push_back(series("swapped", runs[0].time_s, runs[0].swapped));
  } else {
    c.title = "Waiting requests";
    for (const auto& r : runs) c.series.push_back(series(r.label, r.time_s, r.waiting));
  }
  return c;
}

ChartSpec ttft_cdf_chart(const std::vector<RunChartData>& runs) {
  ChartSpec c;
  c.title = "TTFT CDF";
  c.x_label = "time to first token (ms)";
  c.y_label = "fraction of requests";
  for (const auto& r : runs) c.series.push_back(cdf_series(r.label, r.ttft_ms));
  return c;
}

ChartSpec tpot_cdf_chart(const std::vector<RunChartData>& runs) {
  ChartSpec c;
  c.title = "TPOT CDF";
  c.x_label = "time per output token (ms)";
  c.y_label = "fraction of requests";
  for (const auto& r : runs) c.series.push_back(cdf_series(r.label, r.tpot_ms));
  return c;
}

std::string render_figures_html(const std::vector<std::pair<ChartSpec, std::string>>& charts) {
  const auto gnuplot = find_gnuplot();
  if (!gnuplot) return html_charts_missing_note();
  std::string out = "<div class=\"charts\">\n";
  for (const auto& [chart, caption] : charts) {
    if (auto svg = render_chart_svg(chart, *gnuplot)) out += html_figure(*svg, caption);
  }
  return out + "</div>\n";
}

}  // namespace kvsim
