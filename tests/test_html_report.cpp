// report.html: self-contained, user strings escaped, charts from gnuplot when
// it is on PATH and a clear note when it is not.
#include <gtest/gtest.h>

#include "report_test_helpers.hpp"
#include "reports/gnuplot_chart.hpp"
#include "reports/html_page.hpp"
#include "tests/support/test_paths.hpp"

namespace kvsim::KVSIM_TEST_FILE_SCOPE {
namespace {
using testing::TempFolderTest;

TEST(HtmlPage, EscapesEveryMarkupCharacter) {
  EXPECT_EQ(html_escape("<script>alert('x') & \"y\"</script>"),
            "&lt;script&gt;alert(&#39;x&#39;) &amp; &quot;y&quot;&lt;/script&gt;");
  const std::string table = html_table({"<b>"}, {{"<i>1</i>"}, {"2.5"}});
  EXPECT_NE(table.find("<th>&lt;b&gt;</th>"), std::string::npos);
  EXPECT_NE(table.find("<td>&lt;i&gt;1&lt;/i&gt;</td>"), std::string::npos);
  EXPECT_NE(table.find("<td class=\"num\">2.5</td>"), std::string::npos);
  EXPECT_EQ(markdown_table({"a"}, {{"x|y"}}), "| a |\n| --- |\n| x\\|y |\n");
}

TEST(GnuplotChart, LabelsAreReducedToASafeSetAndCdfsEndAtOne) {
  EXPECT_EQ(chart_safe_label("a'; system(\"rm\") <x>"), "a?; system(?rm?) ?x?");
  const ChartSeries s = cdf_series("ttft", {3, 1, 2, 4});
  EXPECT_EQ(s.x, (std::vector<double>{1, 2, 3, 4}));
  EXPECT_EQ(s.y, (std::vector<double>{0.25, 0.5, 0.75, 1.0}));
  const ChartSeries big = cdf_series("big", std::vector<double>(10000, 1.0), 100);
  EXPECT_LE(big.x.size(), 101u);  // every 100th point, plus the last one
  EXPECT_EQ(big.y.back(), 1.0);
}

TEST(GnuplotChart, RendersAnInlineSvgWhenGnuplotIsOnPath) {
  const auto gnuplot = find_gnuplot();
  if (!gnuplot) GTEST_SKIP() << "gnuplot is not on PATH (Debian package gnuplot-nox)";
  ChartSpec c;
  c.title = "t<script>";
  c.series.push_back({"s", {0, 1, 2}, {1, 3, 2}, {}});
  const auto svg = render_chart_svg(c, *gnuplot);
  ASSERT_TRUE(svg.has_value());
  EXPECT_EQ(svg->rfind("<svg", 0), 0u);
  EXPECT_EQ(svg->find("<script"), std::string::npos);
  EXPECT_EQ(svg->find("<?xml"), std::string::npos);
  ChartSpec bars;
  bars.kind = ChartSpec::Kind::bars;
  bars.bar_labels = {"a", "b"};
  bars.series.push_back({"", {}, {1, 2}, {}});
  EXPECT_TRUE(render_chart_svg(bars, *gnuplot).has_value());
  EXPECT_FALSE(render_chart_svg(ChartSpec{}, *gnuplot).has_value());  // no data, no chart
}

class HtmlReport : public TempFolderTest {};

TEST_F(HtmlReport, ScenarioNameWithScriptIsInertAndTheReportIsSelfContained) {
  std::string yaml = testing::small_scenario("x", 20);
  yaml.replace(0, yaml.find('\n'), "name: \"<script>alert(1)</script>\"");
  yaml.replace(yaml.find("description: a small scenario for report tests"),
               std::string("description: a small scenario for report tests").size(),
               "description: \"<img src=x onerror=alert(2)> & more\"");
  const std::string f = write("evil.yaml", yaml);
  const auto r = kvsim("run " + f + " --quiet --out " + path("out"));
  ASSERT_EQ(r.exit_code, 0) << r.output;
  const std::string html = read(path("out") + "/report.html");
  EXPECT_EQ(html.find("<script"), std::string::npos);
  EXPECT_EQ(html.find("<img"), std::string::npos);
  EXPECT_NE(html.find("&lt;script&gt;alert(1)&lt;/script&gt;"), std::string::npos);
  EXPECT_NE(html.find("&lt;img src=x onerror=alert(2)&gt; &amp; more"), std::string::npos);
  // Nothing to fetch: no external stylesheet, script or image.
  EXPECT_EQ(html.find("<link"), std::string::npos);
  EXPECT_EQ(html.find("src=\"http"), std::string::npos);
  EXPECT_NE(html.find("Content-Security-Policy"), std::string::npos);
}

TEST_F(HtmlReport, ChartsWhenGnuplotIsFoundAndANoteWhenItIsNot) {
  const std::string f = write("s.yaml", testing::small_scenario("charts", 20));
  if (find_gnuplot()) {
    const auto r = kvsim("run " + f + " --quiet --out " + path("with"));
    ASSERT_EQ(r.exit_code, 0) << r.output;
    const std::string html = read(path("with") + "/report.html");
    size_t charts = 0;
    for (size_t at = html.find("<svg"); at != std::string::npos; at = html.find("<svg", at + 1))
      ++charts;
    // A server's charts: KV memory against the pool's capacity, queue, batch
    // size, tokens per step, prefix hit rate (it shares prefixes), and with
    // 20 requests (too few for a CDF) each request's latency.
    EXPECT_EQ(charts, 6u);
    for (const char* title : {"KV cache memory in use", "pool capacity", "Queue length",
                              "Batch size", "Tokens per step", "Prefix-cache hit rate"})
      EXPECT_NE(html.find(title), std::string::npos) << title;
  }
  // PATH without gnuplot: the report still writes, without charts, and says so.
  const auto r = testing::run_command("env PATH=/nonexistent " + std::string(KVSIM_BINARY) +
                                      " run " + f + " --quiet --out " + path("without"));
  ASSERT_EQ(r.exit_code, 0) << r.output;
  const std::string html = read(path("without") + "/report.html");
  EXPECT_EQ(html.find("<svg"), std::string::npos);
  EXPECT_NE(html.find("gnuplot was not found on PATH"), std::string::npos);
  EXPECT_NE(html.find("<h2>Memory plan (per device)</h2>"), std::string::npos);
  EXPECT_NE(read(path("without") + "/report.md").find("report.html"), std::string::npos);
}

TEST_F(HtmlReport, DialogRunShowsGenieBuffersAndVtcmSessionsNotABlockPool) {
  const std::string scenario =
      std::string(KVSIM_SOURCE_DIR) + "/configs/scenarios/htp-vtcm-contention-v75.yaml";
  const auto r = kvsim("run " + scenario + " --quiet --out " + path("dialog"));
  ASSERT_EQ(r.exit_code, 0) << r.output;
  const std::string html = read(path("dialog") + "/report.html");
  EXPECT_NE(html.find("<h2>KV cache (Genie buffers)</h2>"), std::string::npos);
  EXPECT_NE(html.find("<h2>VTCM sessions</h2>"), std::string::npos);
  EXPECT_NE(html.find("camera"), std::string::npos);
  EXPECT_NE(html.find("Genie buffers of ctx_size 4096"), std::string::npos);
  EXPECT_EQ(html.find("blocks of"), std::string::npos);
  EXPECT_EQ(html.find("KV pool ("), std::string::npos);
}

}  // namespace
}  // namespace kvsim::KVSIM_TEST_FILE_SCOPE
