#include "reports/output_dir.hpp"

#include <fcntl.h>
#include <fmt/format.h>
#include <sys/file.h>
#include <unistd.h>

#include <cerrno>
#include <csignal>
#include <cstdlib>
#include <filesystem>
#include <string_view>

namespace kvsim {
namespace fs = std::filesystem;
namespace {

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
  const OutputTarget target = output_target("--out", path, OutputShape::folder, force);
  refuse_unless_writable(target);
  fs::create_directories(target.path);
  write_file_atomically((target.path / kOutputMarker).string(), output_marker_text());
}

OutputDir::OutputDir(std::string final_path, bool force)
    : target_(output_target("--out", final_path, OutputShape::folder, force)) {
  const fs::path& p = target_.path;
  final_ = p.string();
  refuse_unless_writable(target_);
  fs::create_directories(p.parent_path());
  // Each step that creates something hands it to a TemporaryPath first, so
  // a failure at any later step (a full disk while the marker is written)
  // removes what came before.
  const std::string lock_path =
      (p.parent_path() / fmt::format(".{}.lock", p.filename().string())).string();
  lock_fd_ = ::open(lock_path.c_str(), O_CREAT | O_RDWR | O_CLOEXEC, 0644);
  if (lock_fd_ < 0)
    throw fs::filesystem_error("cannot create the output lock", fs::path(lock_path),
                               std::error_code(errno, std::generic_category()));
  if (::flock(lock_fd_, LOCK_EX | LOCK_NB) != 0) {
    ::close(lock_fd_);
    lock_fd_ = -1;
    throw OutputRefused(fmt::format("--out {}: another kvsim is writing it now ({})", final_,
                                    "wait for it, or choose another --out"));
  }
  lock_file_ = TemporaryPath(lock_path);
  try {
    remove_stale_leftovers(p);
    temp_ = TemporaryPath(temporary_sibling(p));
    fs::remove_all(temp_.path());
    fs::create_directories(temp_.path());
    write_file_atomically(file(kOutputMarker), output_marker_text());
  } catch (...) {
    temp_ = TemporaryPath();
    lock_file_ = TemporaryPath();
    ::close(lock_fd_);
    lock_fd_ = -1;
    throw;
  }
}

OutputDir::~OutputDir() {
  temp_ = TemporaryPath();       // removed unless committed
  lock_file_ = TemporaryPath();  // the lock file goes before its descriptor closes
  if (lock_fd_ >= 0) ::close(lock_fd_);
}

std::string OutputDir::file(const std::string& name) const {
  return (fs::path(temp_.path()) / name).string();
}

void OutputDir::commit() {
  // What is at the destination now may have changed since the constructor
  // looked (another program made a device node or a file there).
  refuse_unless_writable(target_);
  std::error_code ec;
  const std::string old = fmt::format("{}.old-{}", final_, getpid());
  TemporaryPath aside;
  if (fs::exists(fs::symlink_status(final_, ec))) {
    fs::rename(final_, old);
    aside = TemporaryPath(old);
  }
  fs::rename(temp_.path(), final_, ec);
  if (ec) {
    if (!aside.path().empty()) {
      fs::rename(old, final_);
      aside.release();
    }
    throw fs::filesystem_error("cannot move output into place", fs::path(final_), ec);
  }
  temp_.release();
}

}  // namespace kvsim
