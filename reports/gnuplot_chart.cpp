#include "reports/gnuplot_chart.hpp"

#include <fcntl.h>
#include <fmt/format.h>
#include <pthread.h>
#include <signal.h>
#include <sys/wait.h>
#include <unistd.h>

#include <algorithm>
#include <chrono>
#include <cstdlib>
#include <filesystem>
#include <fstream>
#include <sstream>
#include <thread>

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

std::string quoted(const std::string& s) {
  return fmt::format("'{}'", chart_safe_label(s));
}

bool has_data(const ChartSpec& chart) {
  for (const auto& s : chart.series)
    if (!s.y.empty() || !s.x_end.empty()) return true;
  return false;
}

constexpr const char* kColours[] = {"#0969da", "#cf222e", "#1a7f37", "#8250df",
                                    "#bc4c00", "#1b7c83", "#6e7781", "#bf3989"};

// The script drawing chart `k` into `chart{k}.svg`, its data files written
// into `dir` as `chart{k}_*.dat`. Every name is relative to `dir`, so nothing
// of the temporary folder's random name reaches the SVG (gnuplot writes a
// plot's data file into its <title> when the plot has no title). `reset`
// first: one process draws every chart, and no setting carries over.
std::string chart_script(const ChartSpec& chart, size_t k, const std::string& dir) {
  const std::string name = fmt::format("chart{}", k);
  std::string script = fmt::format(
      "reset\nset terminal svg size {},{} font 'sans,11' background rgb 'white'\n"
      "set output '{}.svg'\nset termoption noenhanced\nset title {}\nset xlabel {}\n"
      "set ylabel {}\nset grid ytics lc rgb '#dddddd'\nset key below horizontal noopaque\n"
      "set border 3\nset tics nomirror\nset yrange [0:*]\n",
      chart.width, chart.height, name, quoted(chart.title), quoted(chart.x_label),
      quoted(chart.y_label));
  // The legend sits below the plot, off the curves.
  if (chart.log_x) script += "set logscale x\n";
  if (chart.kind == ChartSpec::Kind::bars) {
    std::ofstream data(fmt::format("{}/{}_bars.dat", dir, name));
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
    script += fmt::format("plot '{}_bars.dat' using 1:2:3 with boxes lc palette notitle\n", name);
  } else if (chart.kind == ChartSpec::Kind::spans) {
    const size_t rows = chart.series.size();
    script += fmt::format("unset key\nset yrange [-0.7:{}-0.3]\nset ytics (", rows);
    for (size_t j = 0; j < rows; ++j)
      script += fmt::format("{}{} {}", j ? ", " : "", quoted(chart.series[j].label), j);
    script += ")\nset grid xtics lc rgb '#dddddd'\nplot ";
    for (size_t j = 0; j < rows; ++j) {
      const std::string file = fmt::format("{}_series{}.dat", name, j);
      std::ofstream data(dir + "/" + file);
      const auto& s = chart.series[j];
      for (size_t i = 0; i < s.x.size() && i < s.x_end.size(); ++i)
        data << fmt::format("{:.9g} {} {:.9g}\n", s.x[i], j, s.x_end[i] - s.x[i]);
      if (s.x.empty()) data << "0 " << j << " 0\n";
      script += fmt::format("{}'{}' using 1:2:3:(0) with vectors nohead lw 9 lc rgb '{}' notitle",
                            j ? ", " : "", file, kColours[j % 8]);
    }
    script += "\n";
  } else {
    script += "plot ";
    for (size_t j = 0; j < chart.series.size(); ++j) {
      const std::string file = fmt::format("{}_series{}.dat", name, j);
      std::ofstream data(dir + "/" + file);
      const auto& s = chart.series[j];
      for (size_t i = 0; i < s.x.size() && i < s.y.size(); ++i)
        data << fmt::format("{:.9g} {:.9g}\n", s.x[i], s.y[i]);
      script +=
          fmt::format("{}'{}' using 1:2 with {} lw 2 lc rgb '{}' title {}", j ? ", " : "", file,
                      chart.kind == ChartSpec::Kind::steps    ? "steps"
                      : chart.kind == ChartSpec::Kind::points ? "points pt 7 ps 1.5"
                                                              : "lines",
                      kColours[j % 8], quoted(s.label));
    }
    script += "\n";
  }
  return script + "unset output\n";
}

// The <svg> element gnuplot wrote to `path` (XML prolog stripped), or nullopt
// when the file is missing or was cut short.
std::optional<std::string> read_svg(const std::string& path) {
  std::ifstream in(path);
  if (!in) return std::nullopt;
  std::stringstream text;
  text << in.rdbuf();
  const std::string svg = text.str();
  const size_t start = svg.find("<svg");
  if (start == std::string::npos || svg.find("</svg>", start) == std::string::npos)
    return std::nullopt;
  return svg.substr(start);
}

// Writes all of `text` to `fd`. SIGPIPE (gnuplot gone) is blocked in this
// thread meanwhile and a pending one consumed: a vanished child is a failed
// chart, not a signal that ends the run (output_rule.cpp handles SIGPIPE as
// a cleanup signal).
bool write_all(int fd, const std::string& text) {
  sigset_t pipe_only, old;
  sigemptyset(&pipe_only);
  sigaddset(&pipe_only, SIGPIPE);
  pthread_sigmask(SIG_BLOCK, &pipe_only, &old);
  bool ok = true;
  for (size_t done = 0; done < text.size();) {
    const ssize_t n = ::write(fd, text.data() + done, text.size() - done);
    if (n < 0 && errno == EINTR) continue;
    if (n <= 0) {
      ok = false;
      break;
    }
    done += static_cast<size_t>(n);
  }
  if (!ok) {
    const timespec zero{};
    while (sigtimedwait(&pipe_only, nullptr, &zero) == SIGPIPE) {
    }
  }
  pthread_sigmask(SIG_SETMASK, &old, nullptr);
  return ok;
}

}  // namespace

ChartRenderer::ChartRenderer() : ChartRenderer(find_gnuplot().value_or(std::string())) {}

ChartRenderer::ChartRenderer(std::string gnuplot) : gnuplot_(std::move(gnuplot)) {
  if (gnuplot_.empty()) return;
  std::error_code ec;
  std::string tmpl = (fs::temp_directory_path(ec) / "kvsim-gnuplot-XXXXXX").string();
  if (mkdtemp(tmpl.data()) == nullptr) return;
  dir_ = tmpl;
  owner_ = TemporaryPath(dir_);
  int fds[2];
  if (pipe2(fds, O_CLOEXEC) != 0) return;
  const pid_t pid = fork();
  if (pid < 0) {
    close(fds[0]);
    close(fds[1]);
    return;
  }
  if (pid == 0) {  // only async-signal-safe calls until execv
    if (chdir(dir_.c_str()) != 0) _exit(127);
    if (dup2(fds[0], STDIN_FILENO) < 0) _exit(127);
    const int null_fd = open("/dev/null", O_RDWR);
    if (null_fd >= 0) {
      dup2(null_fd, STDOUT_FILENO);
      dup2(null_fd, STDERR_FILENO);
    }
    char* const argv[] = {const_cast<char*>("gnuplot"), nullptr};
    execv(gnuplot_.c_str(), argv);
    _exit(127);
  }
  close(fds[0]);
  pid_ = pid;
  script_fd_ = fds[1];
}

ChartRenderer::~ChartRenderer() {
  finish();
}

bool ChartRenderer::finish() {
  if (script_fd_ >= 0) close(script_fd_);  // end of script: gnuplot exits
  script_fd_ = -1;
  if (pid_ < 0) return false;
  // A gnuplot that does not exit within kMaxWait of its script's end is
  // stopped: the report goes without charts rather than never.
  constexpr auto kMaxWait = std::chrono::seconds(60);
  const auto deadline = std::chrono::steady_clock::now() + kMaxWait;
  auto pause = std::chrono::microseconds(100);
  int status = 0;
  for (;;) {
    const pid_t done = waitpid(pid_, &status, WNOHANG);
    if (done == pid_) break;
    if (done < 0 && errno != EINTR) {
      pid_ = -1;
      return false;
    }
    if (std::chrono::steady_clock::now() >= deadline) {
      kill(pid_, SIGKILL);
      while (waitpid(pid_, &status, 0) < 0 && errno == EINTR) {
      }
      pid_ = -1;
      return false;
    }
    std::this_thread::sleep_for(pause);
    pause = std::min(pause * 2, std::chrono::microseconds(1000));
  }
  pid_ = -1;
  return WIFEXITED(status) && WEXITSTATUS(status) == 0;
}

std::vector<std::optional<std::string>> ChartRenderer::render(
    const std::vector<ChartSpec>& charts) {
  std::vector<std::optional<std::string>> svgs(charts.size());
  if (!available()) return svgs;
  std::string script;
  for (size_t k = 0; k < charts.size(); ++k)
    if (has_data(charts[k])) script += chart_script(charts[k], k, dir_);
  const bool sent = write_all(script_fd_, script);
  finish();
  for (size_t k = 0; k < charts.size(); ++k)
    if (has_data(charts[k])) svgs[k] = read_svg(fmt::format("{}/chart{}.svg", dir_, k));
  // gnuplot stops at a script's first error: the charts after it are drawn
  // again, each by a process of its own, so one bad chart costs only itself.
  if (sent && charts.size() > 1)
    for (size_t k = 0; k < charts.size(); ++k)
      if (!svgs[k] && has_data(charts[k])) svgs[k] = ChartRenderer(gnuplot_).render({charts[k]})[0];
  return svgs;
}

std::optional<std::string> render_chart_svg(const ChartSpec& chart, const std::string& gnuplot) {
  return ChartRenderer(gnuplot).render({chart})[0];
}

}  // namespace kvsim
