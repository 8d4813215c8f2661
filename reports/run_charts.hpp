#pragma once
// The charts of SPEC 9 built from the series a run gathered while it
// streamed (reports/run_series.hpp), never from its CSV files read back: a
// chart holds at most RunSeries::kMaxBuckets points per line whatever the
// run's length. Used by report.html (one run) and compare.html (one line per
// variant). Which charts a run shows is up to the components it ran (the
// engine's report parts, reports/run_report_sections.hpp).
#include <optional>
#include <string>
#include <utility>
#include <vector>

#include "reports/gnuplot_chart.hpp"
#include "reports/run_series.hpp"

namespace kvsim {

struct LabelledSeries {
  std::string label;
  const RunSeries* series = nullptr;
};

// A chart and its caption.
using CaptionedChart = std::pair<ChartSpec, std::string>;

// A gauge over a run's buckets: the bucket's maximum (`max_of`), or the
// last value before it (`last_of`) when no row fell in it; divided by `scale`.
using Gauge = double SeriesBucket::*;
ChartSeries gauge_series(const std::string& label, const RunSeries& run, Gauge max_of,
                         Gauge last_of, double scale = 1.0);
// An empty chart over simulated time.
ChartSpec time_chart(std::string title, std::string y_label);

// KV memory in use (the peak within each time bucket); with `capacity_bytes`
// the pool's capacity as a line.
ChartSpec kv_memory_chart(const std::vector<LabelledSeries>& runs,
                          std::optional<double> capacity_bytes = std::nullopt);
// One run: running, waiting and swapped; several runs: waiting per run.
ChartSpec queue_chart(const std::vector<LabelledSeries>& runs);
// Mean sequences per step, and tokens per step, within each time bucket.
ChartSpec batch_size_chart(const std::vector<LabelledSeries>& runs);
ChartSpec tokens_per_step_chart(const std::vector<LabelledSeries>& runs);
// Prefix-cache hit rate of the lookups within each time bucket.
ChartSpec prefix_hit_rate_chart(const std::vector<LabelledSeries>& runs);
// KV bytes moved by updates, and pointer updates, summed from the start.
ChartSpec bytes_moved_chart(const std::vector<LabelledSeries>& runs);
ChartSpec pointer_updates_chart(const std::vector<LabelledSeries>& runs);
ChartSpec ttft_cdf_chart(const std::vector<LabelledSeries>& runs);
ChartSpec tpot_cdf_chart(const std::vector<LabelledSeries>& runs);
// Runs with few requests: TTFT and end-to-end latency of each, in order;
// several runs: the TTFT of each request per run.
ChartSpec per_request_latency_chart(const RunSeries& run);
ChartSpec per_request_ttft_chart(const std::vector<LabelledSeries>& runs);
// Whether every run completed enough requests for a CDF to say more than
// its few points (else per_request_*).
bool enough_for_cdf(const std::vector<LabelledSeries>& runs);
// The first turns of a dialog: VTCM waits, passes by kind and KV updates
// (variant switches apart) on one time axis; spans closer than the chart
// can show are drawn as one.
ChartSpec turn_timeline_chart(const RunSeries& run);
// Bars: one per (label, value).
ChartSpec bar_chart(const std::string& title, const std::string& y_label,
                    const std::vector<std::pair<std::string, double>>& bars);

// True when some line of the chart has a non-zero value.
bool chart_has_signal(const ChartSpec& chart);

// Renders every chart into HTML figures, or the "no gnuplot" note: by
// `renderer` when given (one started before the run), else by one made here.
std::string render_figures_html(const std::vector<CaptionedChart>& charts,
                                ChartRenderer* renderer = nullptr);

}  // namespace kvsim
