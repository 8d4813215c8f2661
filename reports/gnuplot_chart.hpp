#pragma once
// Charts rendered by gnuplot to SVG for the HTML reports (SPEC 9). gnuplot is
// found on PATH at run time; it runs as a child process (fork + execv, never a
// shell) on a script and data files in a private temporary folder. Labels are
// reduced to a safe character set before they reach the script, so no user
// string can become a gnuplot command or SVG markup. Without gnuplot every
// render returns nullopt and the reports say so.
#include <optional>
#include <string>
#include <vector>

namespace kvsim {

struct ChartSeries {
  std::string label;
  std::vector<double> x, y;
  // spans charts: a bar from x[i] to x_end[i] on this series' row.
  std::vector<double> x_end;
};

struct ChartSpec {
  // spans: one row per series (labelled on the y axis), a bar per span.
  // points: a marker per (x, y), e.g. one series per variant of a compare.
  enum class Kind { lines, steps, bars, spans, points };
  Kind kind = Kind::lines;
  std::string title, x_label, y_label;
  std::vector<ChartSeries> series;      // lines/steps: one line each
  std::vector<std::string> bar_labels;  // bars: one bar per label, from series[0].y
  int width = 560, height = 320;
  bool log_x = false;
};

// The gnuplot executable found on PATH, if any.
std::optional<std::string> find_gnuplot();

// Renders a chart to an inline <svg> element (XML prolog stripped), or
// nullopt when gnuplot is missing, fails, or the chart has no data.
std::optional<std::string> render_chart_svg(const ChartSpec& chart, const std::string& gnuplot);

// The label as it will appear in a chart: printable ASCII from a safe set,
// anything else replaced by '?'.
std::string chart_safe_label(const std::string& text);

// Points of an empirical CDF of `values` (sorted copy), at most `max_points`.
ChartSeries cdf_series(std::string label, std::vector<double> values, size_t max_points = 1000);

}  // namespace kvsim
