#include "reports/gnuplot_chart.hpp"

#include <fcntl.h>
#include <fmt/format.h>
#include <sys/wait.h>
#include <unistd.h>

#include <algorithm>
#include <cstdlib>
#include <filesystem>
#include <fstream>
#include <sstream>

#include "reports/output_rule.hpp"

namespace kvsim {
namespace fs = std::filesystem;

std::optional<std::string> find_gnuplot() {
  const char* path = std::getenv("PATH");
  if (path == nullptr) return std::nullopt;
  std::stringstream dirs(path);
  std::string dir;
  while (std::getline(dirs, dir, ':')) {
    if (dir.empty()) continue;
    const std::string candidate = dir + "/gnuplot";
    if (access(candidate.c_str(), X_OK) == 0) return candidate;
  }
  return std::nullopt;
}

std::string chart_safe_label(const std::string& text) {
  std::string out;
  for (const char c : text) {
    const bool safe = (c >= 'a' && c <= 'z') || (c >= 'A' && c <= 'Z') || (c >= '0' && c <= '9') ||
                      std::string_view(" .,:;=/()%+-_[]#").find(c) != std::string_view::npos;
    out += safe ? c : '?';
  }
  return out.substr(0, 80);
}

ChartSeries cdf_series(std::string label, std::vector<double> values, size_t max_points) {
  ChartSeries s;
  s.label = std::move(label);
  std::sort(values.begin(), values.end());
  const size_t n = values.size();
  if (n == 0) return s;
  const size_t stride = std::max<size_t>(1, n / std::max<size_t>(1, max_points));
  for (size_t i = 0; i < n; i += stride) {
    s.x.push_back(values[i]);
    s.y.push_back(static_cast<double>(i + 1) / static_cast<double>(n));
  }
  if (s.y.back() < 1.0) {
    s.x.push_back(values.back());
    s.y.push_back(1.0);
  }
  return s;
}

namespace {

// Removes the temporary folder whatever happens, a signal included
// (reports/output_rule.hpp).
struct TempFolder {
  std::string path;
  TemporaryPath owner;
  TempFolder() {
    std::error_code ec;
    std::string tmpl = (fs::temp_directory_path(ec) / "kvsim-gnuplot-XXXXXX").string();
    if (mkdtemp(tmpl.data()) != nullptr) {
      path = tmpl;
      owner = TemporaryPath(path);
    }
  }
};

std::string quoted(const std::string& s) {
  return fmt::format("'{}'", chart_safe_label(s));
}

// Runs `gnuplot script` in the folder `dir`, with stdin/stdout/stderr on
// /dev/null; true on exit 0. The script names its files relative to `dir`,
// so nothing of the temporary folder's random name reaches the SVG (gnuplot
// writes a plot's data file into its <title> when the plot has no title).
bool run_gnuplot(const std::string& gnuplot, const std::string& dir, const std::string& script) {
  const pid_t pid = fork();
  if (pid < 0) return false;
  if (pid == 0) {
    if (chdir(dir.c_str()) != 0) _exit(127);
    const int null_fd = open("/dev/null", O_RDWR);
    if (null_fd >= 0) {
      dup2(null_fd, STDIN_FILENO);
      dup2(null_fd, STDOUT_FILENO);
      dup2(null_fd, STDERR_FILENO);
    }
    char* const argv[] = {const_cast<char*>("gnuplot"), const_cast<char*>(script.c_str()), nullptr};
    execv(gnuplot.c_str(), argv);
    _exit(127);
  }
  int status = 0;
  while (waitpid(pid, &status, 0) < 0) {
    if (errno != EINTR) return false;
  }
  return WIFEXITED(status) && WEXITSTATUS(status) == 0;
}

}  // namespace

std::optional<std::string> render_chart_svg(const ChartSpec& chart, const std::string& gnuplot) {
  bool any = false;
  for (const auto& s : chart.series) any = any || !s.y.empty() || !s.x_end.empty();
  if (!any) return std::nullopt;
  TempFolder tmp;
  if (tmp.path.empty()) return std::nullopt;
  const std::string svg_path = tmp.path + "/chart.svg";
  const std::string svg_name = "chart.svg";  // the script's names are relative
  std::string script = fmt::format(
      "set terminal svg size {},{} font 'sans,11' background rgb 'white'\n"
      "set output '{}'\nset termoption noenhanced\nset title {}\nset xlabel {}\nset ylabel {}\n"
      "set grid ytics lc rgb '#dddddd'\nset key below horizontal noopaque\nset border 3\n"
      "set tics nomirror\nset yrange [0:*]\n",
      chart.width, chart.height, svg_name, quoted(chart.title), quoted(chart.x_label),
      quoted(chart.y_label));
  // The legend sits below the plot, off the curves.
  if (chart.log_x) script += "set logscale x\n";
  static const char* kColours[] = {"#0969da", "#cf222e", "#1a7f37", "#8250df",
                                   "#bc4c00", "#1b7c83", "#6e7781", "#bf3989"};
  if (chart.kind == ChartSpec::Kind::bars) {
    std::ofstream data(tmp.path + "/bars.dat");
    const auto& ys = chart.series.at(0).y;
    for (size_t i = 0; i < ys.size(); ++i)
      data << i << ' ' << fmt::format("{:.9g}", ys[i]) << ' ' << (i % 8) << '\n';
    script +=
        "set style fill solid 0.8 border -1\nset boxwidth 0.6\nunset key\n"
        "set xrange [-0.6:" +
        std::to_string(ys.size()) + "-0.4]\nset xtics (";
    for (size_t i = 0; i < chart.bar_labels.size(); ++i)
      script += fmt::format("{}{} {}", i ? ", " : "", quoted(chart.bar_labels[i]), i);
    script += ") rotate by -20\nset palette defined (";
    for (int i = 0; i < 8; ++i) script += fmt::format("{}{} '{}'", i ? ", " : "", i, kColours[i]);
    script += ")\nset cbrange [0:7]\nunset colorbox\n";
    script += "plot 'bars.dat' using 1:2:3 with boxes lc palette notitle\n";
  } else if (chart.kind == ChartSpec::Kind::spans) {
    const size_t rows = chart.series.size();
    script += fmt::format("unset key\nset yrange [-0.7:{}-0.3]\nset ytics (", rows);
    for (size_t k = 0; k < rows; ++k)
      script += fmt::format("{}{} {}", k ? ", " : "", quoted(chart.series[k].label), k);
    script += ")\nset grid xtics lc rgb '#dddddd'\nplot ";
    for (size_t k = 0; k < rows; ++k) {
      const std::string file = fmt::format("series{}.dat", k);
      std::ofstream data(tmp.path + "/" + file);
      const auto& s = chart.series[k];
      for (size_t i = 0; i < s.x.size() && i < s.x_end.size(); ++i)
        data << fmt::format("{:.9g} {} {:.9g}\n", s.x[i], k, s.x_end[i] - s.x[i]);
      if (s.x.empty()) data << "0 " << k << " 0\n";
      script += fmt::format("{}'{}' using 1:2:3:(0) with vectors nohead lw 9 lc rgb '{}' notitle",
                            k ? ", " : "", file, kColours[k % 8]);
    }
    script += "\n";
  } else {
    script += "plot ";
    for (size_t k = 0; k < chart.series.size(); ++k) {
      const std::string file = fmt::format("series{}.dat", k);
      std::ofstream data(tmp.path + "/" + file);
      const auto& s = chart.series[k];
      for (size_t i = 0; i < s.x.size() && i < s.y.size(); ++i)
        data << fmt::format("{:.9g} {:.9g}\n", s.x[i], s.y[i]);
      script +=
          fmt::format("{}'{}' using 1:2 with {} lw 2 lc rgb '{}' title {}", k ? ", " : "", file,
                      chart.kind == ChartSpec::Kind::steps    ? "steps"
                      : chart.kind == ChartSpec::Kind::points ? "points pt 7 ps 1.5"
                                                              : "lines",
                      kColours[k % 8], quoted(s.label));
    }
    script += "\n";
  }
  const std::string script_path = tmp.path + "/chart.gp";
  {
    std::ofstream out(script_path);
    out << script;
    if (!out) return std::nullopt;
  }
  if (!run_gnuplot(gnuplot, tmp.path, "chart.gp")) return std::nullopt;
  std::ifstream in(svg_path);
  std::stringstream text;
  text << in.rdbuf();
  const std::string svg = text.str();
  const size_t start = svg.find("<svg");
  if (start == std::string::npos) return std::nullopt;
  return svg.substr(start);
}

}  // namespace kvsim
