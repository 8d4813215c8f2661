#include "reports/output_dir.hpp"

#include <fcntl.h>
#include <fmt/format.h>
#include <sys/file.h>
#include <unistd.h>

#include <cctype>
#include <cerrno>
#include <csignal>
#include <cstdlib>
#include <filesystem>
#include <fstream>
#include <mutex>
#include <set>
#include <string_view>
#include <vector>

namespace kvsim {
namespace fs = std::filesystem;
namespace {

// Temporary folders and lock files of this process, removed if a signal
// ends it before commit(). A handler only runs when the process is being
// ended anyway, so the filesystem calls it makes are a best effort.
std::mutex g_live_mutex;
std::vector<std::string>& live_paths() {
  static std::vector<std::string> paths;
  return paths;
}

extern "C" void remove_live_paths_and_reraise(int sig) {
  for (const std::string& p : live_paths()) {
    std::error_code ec;
    fs::remove_all(p, ec);
  }
  std::signal(sig, SIG_DFL);
  std::raise(sig);
}

void register_live(const std::string& path) {
  static std::once_flag handlers;
  std::call_once(handlers, [] {
    for (int sig : {SIGINT, SIGTERM, SIGHUP}) std::signal(sig, remove_live_paths_and_reraise);
  });
  std::lock_guard<std::mutex> lock(g_live_mutex);
  live_paths().push_back(path);
}

void unregister_live(const std::string& path) {
  std::lock_guard<std::mutex> lock(g_live_mutex);
  auto& v = live_paths();
  std::erase(v, path);
}

bool process_is_gone(long pid) {
  return pid > 0 && ::kill(static_cast<pid_t>(pid), 0) != 0 && errno == ESRCH;
}

// ".NAME.tmp-PID" and "NAME.old-PID" of dead processes, beside `final`.
void remove_stale_leftovers(const fs::path& final) {
  const std::string name = final.filename().string();
  const std::string tmp_prefix = "." + name + ".tmp-";
  const std::string old_prefix = name + ".old-";
  std::error_code ec;
  for (const auto& e : fs::directory_iterator(final.parent_path(), ec)) {
    const std::string f = e.path().filename().string();
    std::string_view rest;
    if (f.rfind(tmp_prefix, 0) == 0)
      rest = std::string_view(f).substr(tmp_prefix.size());
    else if (f.rfind(old_prefix, 0) == 0)
      rest = std::string_view(f).substr(old_prefix.size());
    else
      continue;
    if (rest.empty() || rest.find_first_not_of("0123456789") != std::string_view::npos) continue;
    if (process_is_gone(std::strtol(std::string(rest).c_str(), nullptr, 10)))
      fs::remove_all(e.path(), ec);
  }
}

bool is_ancestor_or_same(const fs::path& dir, const fs::path& p) {
  auto d = dir.begin();
  auto q = p.begin();
  for (; d != dir.end(); ++d, ++q) {
    if (q == p.end() || *d != *q) return false;
  }
  return true;
}

void refuse(const fs::path& p, const std::string& why, const std::string& allowed) {
  throw OutputRefused(fmt::format("--out {}: {} ({})", p.string(), why, allowed));
}

// Never replaced, whatever the flags: they hold the user's working tree.
void refuse_protected(const fs::path& p) {
  std::error_code ec;
  const fs::path cwd = fs::weakly_canonical(fs::current_path(ec), ec);
  const fs::path real = fs::weakly_canonical(p, ec);
  if (real == real.root_path()) refuse(p, "is the filesystem root", "a folder of its own");
  if (const char* home = std::getenv("HOME"); home != nullptr && *home != '\0') {
    if (real == fs::weakly_canonical(fs::path(home), ec))
      refuse(p, "is the home folder", "a folder of its own");
  }
  if (is_ancestor_or_same(real, cwd))
    refuse(p, "is the working folder or holds it", "a folder of its own, e.g. out/NAME");
}

// Output folders of kvsim versions before the marker: nothing but the files
// kvsim writes, and compare's numbered variant folders holding the same.
bool looks_like_unmarked_kvsim_output(const fs::path& dir, int depth = 0) {
  static const std::set<std::string> kFiles = {
      "metrics.json",   "requests.csv", "timeline.csv",  "report.md",       "report.html",
      "compare.json",   "compare.csv",  "compare.md",    "compare.html",    "capacity.json",
      "capacity.csv",   "capacity.md",  "capacity.html", "calibration.csv", "calibration.json",
      "calibration.md", "hitcurve.csv", "hitcurve.json", "hitcurve.md",     "hitcurve.html"};
  std::error_code ec;
  bool any = false;
  for (const auto& e : fs::directory_iterator(dir, ec)) {
    const std::string name = e.path().filename().string();
    const auto st = e.symlink_status(ec);
    const bool variant_folder = depth == 0 && name.size() > 3 &&
                                std::isdigit(static_cast<unsigned char>(name[0])) &&
                                std::isdigit(static_cast<unsigned char>(name[1])) && name[2] == '-';
    if (fs::is_regular_file(st) && kFiles.count(name) > 0)
      any = true;
    else if (fs::is_directory(st) && variant_folder &&
             looks_like_unmarked_kvsim_output(e.path(), depth + 1))
      any = true;
    else
      return false;
  }
  return any && !ec;
}

void refuse_foreign(const fs::path& p, bool force) {
  std::error_code ec;
  const auto status = fs::symlink_status(p, ec);
  if (!fs::exists(status)) return;
  if (force) return;
  if (!fs::is_directory(status))
    refuse(p, "exists and is not a folder kvsim wrote", "another --out, or --force to replace it");
  if (fs::exists(p / kOutputMarker, ec)) return;
  if (fs::is_empty(p, ec)) return;
  if (looks_like_unmarked_kvsim_output(p)) return;
  refuse(p, "is a folder kvsim did not write (it has no .kvsim marker) and is not empty",
         "another --out, or --force to replace it");
}

}  // namespace

std::string fresh_output_folder(const std::string& stem) {
  std::error_code ec;
  if (!std::filesystem::exists(std::filesystem::symlink_status(stem, ec))) return stem;
  for (int i = 2; i < 100000; ++i) {
    const std::string candidate = stem + "-" + std::to_string(i);
    if (!std::filesystem::exists(std::filesystem::symlink_status(candidate, ec))) return candidate;
  }
  throw OutputRefused(stem + ": 100000 earlier outputs beside it; give --out");
}

std::string safe_path_component(const std::string& name) {
  std::string s;
  for (char c : name) {
    const auto u = static_cast<unsigned char>(c);
    s += (c == '/' || c == '\\' || u < 0x20 || u == 0x7f) ? '_' : c;
  }
  if (!s.empty() && s.front() == '.') s.front() = '_';
  if (s.size() > 96) s.resize(96);
  return s.empty() ? "scenario" : s;
}

void claim_output_folder(const std::string& path, bool force) {
  fs::path p = fs::absolute(fs::path(path)).lexically_normal();
  if (p.filename().empty()) p = p.parent_path();
  refuse_protected(p);
  refuse_foreign(p, force);
  fs::create_directories(p);
  write_file_atomically((p / kOutputMarker).string(),
                        "This folder was written by kvsim. kvsim replaces only folders that carry "
                        "this file.\n");
}

OutputDir::OutputDir(std::string final_path, bool force) : final_(std::move(final_path)) {
  fs::path p = fs::absolute(fs::path(final_)).lexically_normal();
  if (p.filename().empty()) p = p.parent_path();
  final_ = p.string();
  refuse_protected(p);
  refuse_foreign(p, force);
  fs::create_directories(p.parent_path());
  lock_path_ = (p.parent_path() / fmt::format(".{}.lock", p.filename().string())).string();
  lock_fd_ = ::open(lock_path_.c_str(), O_CREAT | O_RDWR | O_CLOEXEC, 0644);
  if (lock_fd_ < 0)
    throw fs::filesystem_error("cannot create the output lock", fs::path(lock_path_),
                               std::error_code(errno, std::generic_category()));
  if (::flock(lock_fd_, LOCK_EX | LOCK_NB) != 0) {
    ::close(lock_fd_);
    lock_fd_ = -1;
    refuse(p, "another kvsim is writing it now", "wait for it, or choose another --out");
  }
  register_live(lock_path_);
  remove_stale_leftovers(p);
  temp_ = (p.parent_path() / fmt::format(".{}.tmp-{}", p.filename().string(), getpid())).string();
  fs::remove_all(temp_);
  register_live(temp_);
  fs::create_directories(temp_);
  write_file_atomically(file(kOutputMarker),
                        "This folder was written by kvsim. kvsim replaces only folders that carry "
                        "this file.\n");
}

OutputDir::~OutputDir() {
  std::error_code ec;
  if (!committed_) fs::remove_all(temp_, ec);
  unregister_live(temp_);
  if (lock_fd_ >= 0) {
    fs::remove(lock_path_, ec);
    unregister_live(lock_path_);
    ::close(lock_fd_);
  }
}

std::string OutputDir::file(const std::string& name) const {
  return (fs::path(temp_) / name).string();
}

void OutputDir::commit() {
  std::error_code ec;
  const std::string old = fmt::format("{}.old-{}", final_, getpid());
  if (fs::exists(fs::symlink_status(final_, ec))) fs::rename(final_, old);
  fs::rename(temp_, final_, ec);
  if (ec) {
    if (fs::exists(old)) fs::rename(old, final_);
    throw fs::filesystem_error("cannot move output into place", fs::path(final_), ec);
  }
  committed_ = true;
  fs::remove_all(old, ec);
}

void write_file_atomically(const std::string& path, const std::string& contents) {
  const std::string tmp = fmt::format("{}.tmp-{}", path, getpid());
  {
    // A full disk or a read-only folder is the environment's fault: a
    // filesystem_error with the OS's text (exit 2), not an internal error.
    std::ofstream out(tmp, std::ios::binary | std::ios::trunc);
    if (!out)
      throw fs::filesystem_error("cannot write", fs::path(tmp),
                                 std::error_code(errno, std::generic_category()));
    out << contents;
    out.flush();
    if (!out)
      throw fs::filesystem_error("cannot write", fs::path(tmp),
                                 std::error_code(errno ? errno : EIO, std::generic_category()));
  }
  fs::rename(tmp, path);
}

}  // namespace kvsim
