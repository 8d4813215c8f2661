#pragma once
// The data behind a run's charts, read back from its requests.csv and
// timeline.csv, and the charts of SPEC 9 built from it: KV memory and queue
// length over time, TTFT and TPOT CDFs. Used by report.html (one run) and
// compare.html (one series per variant).
#include <string>
#include <vector>

#include "reports/gnuplot_chart.hpp"

namespace kvsim {

struct RunChartData {
  std::string label;
  std::vector<double> time_s, kv_used_gib, running, waiting, swapped;  // timeline.csv
  std::vector<double> ttft_ms, tpot_ms;  // requests.csv, completed requests
};

// Reads the two CSV files of a run folder (missing files give empty columns).
RunChartData read_run_chart_data(const std::string& requests_csv, const std::string& timeline_csv,
                                 std::string label);

ChartSpec kv_memory_chart(const std::vector<RunChartData>& runs);
// One run: running, waiting and swapped; several runs: waiting per run.
ChartSpec queue_chart(const std::vector<RunChartData>& runs);
ChartSpec ttft_cdf_chart(const std::vector<RunChartData>& runs);
ChartSpec tpot_cdf_chart(const std::vector<RunChartData>& runs);

// Renders every chart into HTML figures, or the "no gnuplot" note.
std::string render_figures_html(const std::vector<std::pair<ChartSpec, std::string>>& charts);

}  // namespace kvsim
