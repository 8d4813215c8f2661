// The reports as a reader sees them: report.html of a serving run and of a
// dialog run, and compare.html, loaded in headless Chromium (Debian package
// chromium). A page around them in iframes measures each after layout: no
// console message (a Content-Security-Policy violation or a script error
// would log one), every figure's SVG present with a drawn size and marks in
// it, and no horizontal scrolling at 1,000 px (wide tables scroll inside
// their own block). One browser start checks all three (~2 s: the browser's
// start-up, the reason this test is slower than the others). Skipped, with a
// message, where chromium or gnuplot is absent.
#include <gtest/gtest.h>
#include <unistd.h>

#include <regex>

#include "report_test_helpers.hpp"
#include "reports/gnuplot_chart.hpp"

namespace kvsim::KVSIM_TEST_FILE_SCOPE {
namespace {

std::string find_chromium() {
  for (const char* name : {"chromium", "chromium-browser"}) {
    for (const char* dir : {"/usr/bin/", "/usr/local/bin/", "/snap/bin/"}) {
      const std::string p = std::string(dir) + name;
      if (access(p.c_str(), X_OK) == 0) return p;
    }
  }
  return "";
}

size_t count_of(const std::string& text, const std::string& what) {
  size_t n = 0;
  for (size_t at = text.find(what); at != std::string::npos; at = text.find(what, at + 1)) ++n;
  return n;
}

class ReportInBrowser : public testing::TempFolderTest {
 protected:
  // Loads check.html headless and returns the DOM it leaves with the log.
  testing::CommandResult load_in_browser(const std::string& chromium) const {
    return testing::run_command(
        chromium + " --headless --no-sandbox --disable-gpu --allow-file-access-from-files" +
        " --user-data-dir=" + path("profile") +
        " --enable-logging=stderr --v=0 --virtual-time-budget=10000 --window-size=1100,900" +
        " --dump-dom file://" + path("check.html"));
  }
};

TEST_F(ReportInBrowser, ServingDialogAndCompareReportsRenderWithoutErrorsAndFixedWidth) {
  const std::string chromium = find_chromium();
  if (chromium.empty()) GTEST_SKIP() << "chromium is not installed (Debian package chromium)";
  if (!find_gnuplot()) GTEST_SKIP() << "gnuplot is not on PATH (Debian package gnuplot-nox)";
  const std::string src = KVSIM_SOURCE_DIR;

  const std::string serving = write("serving.yaml", testing::small_scenario("serving", 60));
  ASSERT_EQ(kvsim("run " + serving + " --quiet --out " + path("serving")).exit_code, 0);
  const auto dialog = kvsim("run " + src + "/configs/scenarios/htp-vtcm-contention-v75.yaml" +
                            " --quiet --no-expect --out " + path("dialog"));
  ASSERT_EQ(dialog.exit_code, 0) << dialog.output;
  const auto compare = kvsim("compare " + src +
                             "/configs/scenarios/htp-llama3.2-3b-elite-pointer-shift.yaml"
                             " --vary kv_cache.policy=shift_concat,pointer_shift --quiet --out " +
                             path("compare"));
  ASSERT_EQ(compare.exit_code, 0) << compare.output;

  const std::vector<std::pair<std::string, std::string>> pages = {
      {"serving", path("serving") + "/report.html"},
      {"dialog", path("dialog") + "/report.html"},
      {"compare", path("compare") + "/compare.html"}};
  // Measures each page once it has loaded; the result goes into the DOM,
  // which --dump-dom prints.
  std::string frames, names;
  for (const auto& [name, file] : pages) {
    frames += "<iframe id=\"" + name + "\" style=\"width:1000px;height:800px\" src=\"file://" +
              file + "\"></iframe>\n";
    names += "'" + name + "',";
  }
  write("check.html", "<!DOCTYPE html><html><body>\n" + frames + R"(<pre id="result"></pre>
<script>
var names = [)" + names + R"(], lines = [];
names.forEach(function (name) {
  document.getElementById(name).addEventListener('load', function () {
    var d = this.contentDocument, empty = 0, svgs = d.querySelectorAll('figure svg');
    svgs.forEach(function (s) {
      var r = s.getBoundingClientRect();
      if (r.width < 100 || r.height < 100 || s.querySelectorAll('path').length < 3) empty++;
    });
    var e = d.documentElement;
    lines.push('page ' + name + ' svgs ' + svgs.length + ' empty ' + empty + ' overflow ' +
               (e.scrollWidth > e.clientWidth ? 1 : 0));
    document.getElementById('result').textContent = lines.join('\n');
  });
});
</script></body></html>
)");
  const auto r = load_in_browser(chromium);
  // Every message a page logged (CSP violations, script errors) is a CONSOLE line.
  std::stringstream lines(r.output);
  std::string line;
  while (std::getline(lines, line)) EXPECT_EQ(line.find(":CONSOLE"), std::string::npos) << line;

  for (const auto& [name, file] : pages) {
    const std::string html = read(file);
    const size_t figures = count_of(html, "<figure>");
    EXPECT_GE(figures, name == "dialog" ? 4u : 6u) << name;
    const std::regex result("page " + name + " svgs ([0-9]+) empty ([0-9]+) overflow ([0-9]+)");
    std::smatch m;
    ASSERT_TRUE(std::regex_search(r.output, m, result)) << name << " did not load:\n"
                                                        << r.output.substr(0, 2000);
    EXPECT_EQ(std::stoul(m[1]), figures) << name << ": every figure has its SVG";
    EXPECT_EQ(m[2], "0") << name << ": an SVG chart without size or marks";
    EXPECT_EQ(m[3], "0") << name << ": the page scrolls sideways at 1,000 px";
  }
  // The dialog shows a turn timeline; the update-mode compare shows bytes moved.
  EXPECT_NE(read(path("dialog") + "/report.html").find("VTCM, passes and KV updates"),
            std::string::npos);
  EXPECT_NE(read(path("compare") + "/compare.html").find("bytes moved per variant"),
            std::string::npos);
}

// sweep.html and search.html sort their tables by a script of kvsim's own,
// allowed by its hash in the page's Content-Security-Policy: a click on a
// heading sorts (the script marks the heading), and nothing is logged.
TEST_F(ReportInBrowser, SweepTablesSortUnderThePagesOwnPolicy) {
  const std::string chromium = find_chromium();
  if (chromium.empty()) GTEST_SKIP() << "chromium is not installed (Debian package chromium)";
  const auto sweep = kvsim(std::string("sweep ") + KVSIM_SOURCE_DIR +
                           "/configs/sweeps/htp-llama3.2-3b-policies.yaml --quiet --jobs 2 --out " +
                           path("sweep"));
  ASSERT_EQ(sweep.exit_code, 0) << sweep.output;
  const std::string page = read(path("sweep") + "/sweep.html");
  EXPECT_NE(page.find("script-src 'sha256-"), std::string::npos);
  write("check.html", "<!DOCTYPE html><html><body>\n<iframe id=\"sweep\" src=\"file://" +
                          path("sweep") + "/sweep.html\"></iframe>\n" + R"(<pre id="result"></pre>
<script>
document.getElementById('sweep').addEventListener('load', function () {
  var d = this.contentDocument, th = d.querySelector('table.sortable th');
  var before = d.querySelectorAll('table.sortable tr')[1].textContent;
  th.click();
  th.click();  // twice: descending, so the first row changes if any differ
  var after = d.querySelectorAll('table.sortable tr')[1].textContent;
  document.getElementById('result').textContent =
      'sorted ' + (th.dataset.dir || 'none') + ' moved ' + (before !== after ? 1 : 0);
});
</script></body></html>
)");
  const auto r = load_in_browser(chromium);
  std::stringstream lines(r.output);
  std::string line;
  while (std::getline(lines, line)) EXPECT_EQ(line.find(":CONSOLE"), std::string::npos) << line;
  EXPECT_NE(r.output.find("sorted desc moved 1"), std::string::npos) << r.output.substr(0, 2000);
}

}  // namespace
}  // namespace kvsim::KVSIM_TEST_FILE_SCOPE
