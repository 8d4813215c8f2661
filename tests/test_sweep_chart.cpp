// sweep.html's and search.html's x-y charts (cli/studies/sweep_chart.hpp):
// every legend label is drawn whole, inside the chart, on its own line, so
// variants that differ only at the end of their label stay apart.
#include <gtest/gtest.h>

#include <regex>

#include "cli/studies/sweep_chart.hpp"

namespace kvsim::KVSIM_TEST_FILE_SCOPE {
namespace {

double attribute(const std::string& svg, const std::string& name) {
  std::smatch m;
  const std::regex re("<svg[^>]* " + name + "=\"([0-9.]+)\"");
  if (!std::regex_search(svg, m, re)) return -1;
  return std::stod(m[1]);
}

TEST(SweepChart, LegendLabelsAreWholeAndInsideTheChart) {
  const std::string stem = "model=llama-3-8b parallel.tensor=4 workload.arrival.rate_per_s=12 ";
  XyChart c{"TTFT p99 vs throughput", "output tokens/s", "ms", {}};
  c.series.push_back({stem + "kv_cache.dtype=fp16", {1, 2, 3}, {10, 20, 30}, true});
  c.series.push_back({stem + "kv_cache.dtype=int8", {1, 2, 3}, {12, 22, 32}, true});
  const std::string svg = render_xy_svg(c);
  const double width = attribute(svg, "width"), height = attribute(svg, "height");
  ASSERT_GT(width, 0);
  // Each label whole, in a <text> of its own, starting inside the chart with
  // room for its characters (7 px each is more than 11 px sans-serif needs).
  const std::regex text(R"re(<text x="([0-9.]+)" y="([0-9.]+)">([^<]*)</text>)re");
  int found = 0;
  double last_y = -1;
  for (auto it = std::sregex_iterator(svg.begin(), svg.end(), text); it != std::sregex_iterator();
       ++it) {
    const std::string label = (*it)[3];
    if (label.rfind(stem, 0) != 0) continue;
    ++found;
    const double x = std::stod((*it)[1]), y = std::stod((*it)[2]);
    EXPECT_LE(x + 7.0 * static_cast<double>(label.size()), width) << label;
    EXPECT_LE(y, height) << label;
    EXPECT_GT(y, last_y) << "one line per label";
    last_y = y;
  }
  EXPECT_EQ(found, 2);
  EXPECT_NE(svg.find("kv_cache.dtype=fp16</text>"), std::string::npos);
  EXPECT_NE(svg.find("kv_cache.dtype=int8</text>"), std::string::npos);
}

TEST(SweepChart, ShortLabelsKeepTheChartsSize) {
  XyChart c{"t", "x", "y", {{"a", {1, 2}, {1, 2}, true}}};
  const std::string svg = render_xy_svg(c);
  EXPECT_EQ(attribute(svg, "width"), c.width);
  EXPECT_GT(attribute(svg, "height"), c.height);  // the legend's line below the plot
  EXPECT_EQ(render_xy_svg(XyChart{}), "");
}

}  // namespace
}  // namespace kvsim::KVSIM_TEST_FILE_SCOPE
