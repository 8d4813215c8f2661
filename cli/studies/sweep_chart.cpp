#include "cli/studies/sweep_chart.hpp"

#include <fmt/format.h>

#include <algorithm>
#include <cmath>
#include <limits>

#include "reports/html_page.hpp"

namespace kvsim {
namespace {

constexpr const char* kColours[] = {"#0969da", "#cf222e", "#1a7f37", "#8250df",
                                    "#bc4c00", "#1b7c83", "#6e7781", "#bf3989"};

// A "nice" step (1, 2 or 5 times a power of ten) giving about `ticks` ticks.
double nice_step(double span, int ticks) {
  if (span <= 0) return 1;
  const double raw = span / ticks;
  const double p = std::pow(10.0, std::floor(std::log10(raw)));
  for (const double m : {1.0, 2.0, 5.0})
    if (raw <= m * p) return m * p;
  return 10 * p;
}

// A generous width of `text` at 11 px sans-serif: wider than any glyph run
// of that many characters in the common fonts (~0.6 em per character).
double text_width(const std::string& text) {
  return 7.0 * static_cast<double>(text.size());
}

std::string tick_text(double v) {
  if (std::abs(v) >= 1e6 || (std::abs(v) < 1e-3 && v != 0)) return fmt::format("{:.2g}", v);
  return fmt::format("{:.6g}", v);
}

}  // namespace

std::string render_xy_svg(const XyChart& c) {
  double x0 = std::numeric_limits<double>::infinity(), x1 = -x0, y1 = -x0;
  for (const auto& s : c.series)
    for (size_t i = 0; i < s.x.size() && i < s.y.size(); ++i) {
      x0 = std::min(x0, s.x[i]);
      x1 = std::max(x1, s.x[i]);
      y1 = std::max(y1, s.y[i]);
    }
  if (!std::isfinite(x0)) return {};
  // y from 0 (latencies and rates are positive); x padded by 5% each side.
  const double pad = x1 > x0 ? 0.05 * (x1 - x0) : std::max(1.0, std::abs(x0) * 0.1);
  x0 = std::max(0.0, x0 - pad);
  x1 += pad;
  if (y1 <= 0) y1 = 1;
  y1 *= 1.05;
  // The legend goes under the plot, one full line per series: a label is
  // never cut (variants differing only at the end, fp16 against int8, stay
  // apart), and the chart grows to hold the longest one.
  const double left = 70, right = 20, top = 30, bottom = 45, legend_row = 16;
  double longest = 0;
  for (const auto& s : c.series) longest = std::max(longest, text_width(s.label));
  const double width = std::max<double>(c.width, left + 20 + longest + right);
  const double legend_h = legend_row * static_cast<double>(c.series.size()) + 6;
  const double height = c.height + legend_h;
  const double w = c.width - left - right, h = c.height - top - bottom;
  const auto px = [&](double x) { return left + (x - x0) / (x1 - x0) * w; };
  const auto py = [&](double y) { return top + h - y / y1 * h; };

  std::string svg = fmt::format(
      "<svg xmlns=\"http://www.w3.org/2000/svg\" width=\"{}\" height=\"{}\" "
      "font-family=\"sans-serif\" font-size=\"11\">\n",
      width, height);
  svg += fmt::format("<text x=\"{}\" y=\"16\" font-size=\"13\">{}</text>\n", left,
                     html_escape(c.title));
  const double xs = nice_step(x1 - x0, 6), ys = nice_step(y1, 5);
  for (double t = std::ceil(x0 / xs) * xs; t <= x1; t += xs)
    svg += fmt::format(
        "<line x1=\"{0:.1f}\" y1=\"{1:.1f}\" x2=\"{0:.1f}\" y2=\"{2:.1f}\" stroke=\"#eee\"/>"
        "<text x=\"{0:.1f}\" y=\"{3:.1f}\" text-anchor=\"middle\">{4}</text>\n",
        px(t), top, top + h, top + h + 14, tick_text(t));
  for (double t = 0; t <= y1; t += ys)
    svg += fmt::format(
        "<line x1=\"{0:.1f}\" y1=\"{1:.1f}\" x2=\"{2:.1f}\" y2=\"{1:.1f}\" stroke=\"#eee\"/>"
        "<text x=\"{3:.1f}\" y=\"{4:.1f}\" text-anchor=\"end\">{5}</text>\n",
        left, py(t), left + w, left - 4, py(t) + 4, tick_text(t));
  svg += fmt::format(
      "<rect x=\"{}\" y=\"{}\" width=\"{}\" height=\"{}\" fill=\"none\" stroke=\"#888\"/>\n", left,
      top, w, h);
  svg += fmt::format("<text x=\"{:.1f}\" y=\"{}\" text-anchor=\"middle\">{}</text>\n", left + w / 2,
                     c.height - 8, html_escape(c.x_label));
  svg += fmt::format(
      "<text transform=\"translate(14,{:.1f}) rotate(-90)\" text-anchor=\"middle\">{}</text>\n",
      top + h / 2, html_escape(c.y_label));
  for (size_t k = 0; k < c.series.size(); ++k) {
    const auto& s = c.series[k];
    const char* colour = kColours[k % 8];
    const size_t n = std::min(s.x.size(), s.y.size());
    if (s.joined && n > 1) {
      std::string points;
      for (size_t i = 0; i < n; ++i)
        points += fmt::format("{:.1f},{:.1f} ", px(s.x[i]), py(s.y[i]));
      svg +=
          fmt::format("<polyline fill=\"none\" stroke=\"{}\" stroke-width=\"2\" points=\"{}\"/>\n",
                      colour, points);
    }
    for (size_t i = 0; i < n; ++i)
      svg += fmt::format("<circle cx=\"{:.1f}\" cy=\"{:.1f}\" r=\"3.5\" fill=\"{}\"/>\n",
                         px(s.x[i]), py(s.y[i]), colour);
    const double ly = c.height + legend_row * static_cast<double>(k) + 12;
    svg += fmt::format(
        "<circle cx=\"{:.1f}\" cy=\"{:.1f}\" r=\"4\" fill=\"{}\"/><text x=\"{:.1f}\" "
        "y=\"{:.1f}\">{}</text>\n",
        left + 4, ly - 4, colour, left + 12, ly, html_escape(s.label));
  }
  return svg + "</svg>\n";
}

}  // namespace kvsim
