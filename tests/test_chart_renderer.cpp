// One gnuplot process draws every chart of a page (reports/gnuplot_chart.hpp):
// the same SVGs as one process per chart, one process however many charts,
// a chart gnuplot refuses costs only itself, a gnuplot that dies or hangs
// is no chart and no signal, and the temporary folder always goes.
#include <gtest/gtest.h>
#include <sys/stat.h>

#include <cstdlib>
#include <filesystem>
#include <fstream>
#include <sstream>

#include "report_test_helpers.hpp"
#include "reports/gnuplot_chart.hpp"

namespace kvsim::KVSIM_TEST_FILE_SCOPE {
namespace {
namespace fs = std::filesystem;
using testing::TempFolderTest;

std::vector<ChartSpec> three_charts() {
  ChartSpec lines;
  lines.title = "lines";
  lines.series.push_back({"a", {0, 1, 2}, {1, 3, 2}, {}});
  lines.series.push_back({"b", {0, 1, 2}, {2, 1, 0}, {}});
  ChartSpec empty;  // no data: no chart, and the others unaffected
  ChartSpec bars;
  bars.kind = ChartSpec::Kind::bars;
  bars.title = "bars";
  bars.bar_labels = {"x", "y"};
  bars.series.push_back({"", {}, {1, 2}, {}});
  ChartSpec steps;
  steps.kind = ChartSpec::Kind::steps;
  steps.title = "steps";
  steps.log_x = true;
  steps.series.push_back({"s", {1, 10, 100}, {5, 4, 6}, {}});
  return {lines, empty, bars, steps};
}

class ChartRendererTest : public TempFolderTest {
 protected:
  void SetUp() override {
    TempFolderTest::SetUp();
    const auto gnuplot = find_gnuplot();
    if (!gnuplot) GTEST_SKIP() << "gnuplot is not on PATH (Debian package gnuplot-nox)";
    gnuplot_ = *gnuplot;
    fs::create_directories(path("tmp"));
    const char* old = std::getenv("TMPDIR");
    old_tmpdir_ = old ? old : "";
    had_tmpdir_ = old != nullptr;
    setenv("TMPDIR", path("tmp").c_str(), 1);
  }
  void TearDown() override {
    if (had_tmpdir_)
      setenv("TMPDIR", old_tmpdir_.c_str(), 1);
    else
      unsetenv("TMPDIR");
    TempFolderTest::TearDown();
  }
  // A stand-in gnuplot: a shell script, executable.
  std::string fake(const std::string& name, const std::string& body) {
    const std::string p = write(name, "#!/bin/sh\n" + body);
    fs::permissions(p, fs::perms::owner_all);
    return p;
  }
  bool tmp_is_empty() { return fs::is_empty(path("tmp")); }

  std::string gnuplot_;
  std::string old_tmpdir_;
  bool had_tmpdir_ = false;
};

TEST_F(ChartRendererTest, OneProcessDrawsThePageAsOneProcessPerChartWould) {
  const auto charts = three_charts();
  const std::string counting =
      fake("counting-gnuplot", "echo run >> " + path("runs") + "\nexec " + gnuplot_ + " \"$@\"\n");
  const auto svgs = ChartRenderer(counting).render(charts);
  ASSERT_EQ(svgs.size(), charts.size());
  EXPECT_EQ(read(path("runs")), "run\n");  // four charts, one process
  EXPECT_FALSE(svgs[1].has_value());       // the chart without data
  for (size_t k : {0u, 2u, 3u}) {
    SCOPED_TRACE(charts[k].title);
    ASSERT_TRUE(svgs[k].has_value());
    EXPECT_EQ(svgs[k]->rfind("<svg", 0), 0u);
    EXPECT_NE(svgs[k]->find(charts[k].title), std::string::npos);
    EXPECT_EQ(*svgs[k], render_chart_svg(charts[k], gnuplot_).value_or("none"));
  }
  EXPECT_TRUE(tmp_is_empty());
}

// gnuplot stops at a script's first error: the charts it did not draw are
// drawn again one by one, and only the refused chart is missing.
TEST_F(ChartRendererTest, AChartGnuplotRefusesCostsOnlyItself) {
  auto charts = three_charts();
  charts[2].title = "REFUSED";
  const std::string picky = fake("picky-gnuplot",
                                 "script=$(cat)\n"
                                 "case \"$script\" in *REFUSED*) exit 1;; esac\n"
                                 "printf '%s\\n' \"$script\" | exec " +
                                     gnuplot_ + "\n");
  const auto svgs = ChartRenderer(picky).render(charts);
  EXPECT_TRUE(svgs[0].has_value());
  EXPECT_FALSE(svgs[1].has_value());
  EXPECT_FALSE(svgs[2].has_value());
  EXPECT_TRUE(svgs[3].has_value());
  EXPECT_TRUE(tmp_is_empty());
}

// A gnuplot gone before its script arrives: writing to it would raise
// SIGPIPE, which must not end the caller.
TEST_F(ChartRendererTest, AGnuplotThatExitsAtOnceGivesNoChartsAndNoSignal) {
  const std::string gone = fake("gone-gnuplot", "exit 3\n");
  ChartRenderer renderer(gone);
  ASSERT_TRUE(renderer.available());
  ::sleep(0);  // the child may or may not have exited yet: both must hold
  auto charts = three_charts();
  for (int i = 0; i < 200; ++i) charts.push_back(charts[0]);  // a long script
  const auto svgs = renderer.render(charts);
  for (const auto& svg : svgs) EXPECT_FALSE(svg.has_value());
  EXPECT_TRUE(renderer.render(charts)[0] == std::nullopt);  // once per renderer
}

TEST_F(ChartRendererTest, ARendererNeverUsedLeavesNothingBehind) {
  { ChartRenderer unused(gnuplot_); }
  EXPECT_TRUE(tmp_is_empty());
  ChartRenderer missing("");
  EXPECT_FALSE(missing.available());
  EXPECT_FALSE(missing.render(three_charts())[0].has_value());
}

}  // namespace
}  // namespace kvsim::KVSIM_TEST_FILE_SCOPE
