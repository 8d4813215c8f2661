#pragma once
// A small x-y chart drawn straight to inline SVG for sweep.html: points,
// optionally joined (a rate axis drawn as a curve, a Pareto front). No
// gnuplot: a sweep's report needs points, which the gnuplot helper does not
// draw, and the page stays self-contained and byte-stable. Every label goes
// through html_escape().
#include <string>
#include <vector>

namespace kvsim {

struct XySeries {
  std::string label;
  std::vector<double> x, y;
  bool joined = true;  // a line through the points in the given order
};

struct XyChart {
  std::string title, x_label, y_label;
  std::vector<XySeries> series;
  int width = 640, height = 360;
};

// An <svg> element, or "" when no series has a point.
std::string render_xy_svg(const XyChart& chart);

}  // namespace kvsim
