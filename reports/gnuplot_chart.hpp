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

#include "reports/output_rule.hpp"

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

// One gnuplot process for every chart of a page, started when the renderer
// is made: made before a run, its start-up (loading gnuplot's ~150 shared
// libraries, ~20 ms) overlaps the simulation instead of following it, and a
// page of N charts costs one process, not N. The script reaches gnuplot on
// its stdin; data files and SVGs live in a private temporary folder removed
// whatever happens (reports/output_rule.hpp).
class ChartRenderer {
 public:
  ChartRenderer();  // gnuplot from PATH; unavailable without it
  explicit ChartRenderer(std::string gnuplot);
  ~ChartRenderer();
  ChartRenderer(const ChartRenderer&) = delete;
  ChartRenderer& operator=(const ChartRenderer&) = delete;

  bool available() const { return script_fd_ >= 0; }
  // Draws the charts, once per renderer: each one's inline <svg> element
  // (XML prolog stripped), or nullopt where the chart has no data or gnuplot
  // failed on it.
  std::vector<std::optional<std::string>> render(const std::vector<ChartSpec>& charts);

 private:
  bool finish();  // ends the script and reaps gnuplot; true on exit 0

  std::string gnuplot_, dir_;
  TemporaryPath owner_;
  int pid_ = -1;
  int script_fd_ = -1;
};

// One chart by a renderer of its own, or nullopt when gnuplot is missing,
// fails, or the chart has no data.
std::optional<std::string> render_chart_svg(const ChartSpec& chart, const std::string& gnuplot);

// The label as it will appear in a chart: printable ASCII from a safe set,
// anything else replaced by '?'.
std::string chart_safe_label(const std::string& text);

// Points of an empirical CDF of `values` (sorted copy), at most `max_points`.
ChartSeries cdf_series(std::string label, std::vector<double> values, size_t max_points = 1000);

}  // namespace kvsim
