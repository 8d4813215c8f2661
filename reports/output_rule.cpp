#include "reports/output_rule.hpp"

#include <fcntl.h>
#include <fmt/format.h>
#include <sys/stat.h>
#include <sys/syscall.h>
#include <unistd.h>

#include <array>
#include <atomic>
#include <cerrno>
#include <csignal>
#include <cstdlib>
#include <cstring>
#include <fstream>
#include <mutex>

#include "base/input_file.hpp"

namespace kvsim {
namespace fs = std::filesystem;
namespace {

// Temporary paths and child processes, in fixed slots a signal handler can
// walk while other threads add and remove entries (no container that could
// be reallocating under it). A handler only runs when the process is being
// ended anyway, so the filesystem calls it makes are a best effort.
constexpr size_t kSlots = 1024;
std::array<std::atomic<char*>, kSlots> g_temp_paths{};
std::array<std::atomic<pid_t>, kSlots> g_children{};

// getdents64's record (linux/dirent.h; glibc declares no wrapper before 2.30).
struct LinuxDirent64 {
  uint64_t d_ino;
  int64_t d_off;
  unsigned short d_reclen;
  unsigned char d_type;
  char d_name[1];
};

bool is_dot_or_dotdot(const char* n) {
  return n[0] == '.' && (n[1] == '\0' || (n[1] == '.' && n[2] == '\0'));
}

// `name` under the open folder `parent`, a file or a whole folder, with
// system calls alone (openat, getdents64, unlinkat, lseek, close: safe in a
// signal handler, unlike std::filesystem, which allocates). Each pass reads
// the folder from its start again, since removing entries while reading
// may skip some; a folder deeper than 32 levels is left.
void remove_at(int parent, const char* name, int depth) {
  if (::unlinkat(parent, name, 0) == 0 || errno == ENOENT) return;  // a file, a link, gone
  if (depth > 32) return;
  const int fd = ::openat(parent, name, O_RDONLY | O_DIRECTORY | O_NOFOLLOW | O_CLOEXEC);
  if (fd < 0) return;
  alignas(8) char buf[4096];
  for (int pass = 0; pass < 64; ++pass) {
    bool removed_any = false;
    ::lseek(fd, 0, SEEK_SET);
    for (;;) {
      const long n = ::syscall(SYS_getdents64, fd, buf, sizeof buf);
      if (n <= 0) break;
      for (long off = 0; off < n;) {
        const auto* d = reinterpret_cast<const LinuxDirent64*>(buf + off);
        off += d->d_reclen;
        if (is_dot_or_dotdot(d->d_name)) continue;
        remove_at(fd, d->d_name, depth + 1);
        removed_any = true;
      }
    }
    if (!removed_any) break;
  }
  ::close(fd);
  ::unlinkat(parent, name, AT_REMOVEDIR);
}

constexpr int kCleanupSignals[] = {SIGHUP,  SIGINT,  SIGQUIT, SIGTERM,   SIGPIPE, SIGALRM, SIGUSR1,
                                   SIGUSR2, SIGXCPU, SIGXFSZ, SIGVTALRM, SIGPROF, SIGABRT};

extern "C" void remove_temporaries_and_reraise(int sig) {
  for (auto& child : g_children) {
    const pid_t pid = child.load();
    if (pid > 0) ::kill(pid, SIGTERM);
  }
  for (auto& slot : g_temp_paths) {
    char* p = slot.exchange(nullptr);
    if (p != nullptr) remove_tree_signal_safe(p);
  }
  std::signal(sig, SIG_DFL);
  std::raise(sig);
}

void refuse(const OutputTarget& t, const std::string& why, const std::string& allowed) {
  throw OutputRefused(fmt::format("{} {}: {} ({})", t.flag, t.path.string(), why, allowed));
}

bool is_ancestor_or_same(const fs::path& dir, const fs::path& p) {
  auto d = dir.begin();
  auto q = p.begin();
  for (; d != dir.end(); ++d, ++q) {
    if (d->empty() && std::next(d) == dir.end()) return true;  // a trailing '/'
    if (q == p.end() || *d != *q) return false;
  }
  return true;
}

// Never replaced, whatever the flags: they hold the user's working tree.
void refuse_protected(const OutputTarget& t) {
  std::error_code ec;
  const fs::path cwd = fs::weakly_canonical(fs::current_path(ec), ec);
  const fs::path real = fs::weakly_canonical(t.path, ec);
  if (real == real.root_path()) refuse(t, "is the filesystem root", "a folder of its own");
  if (const char* home = std::getenv("HOME"); home != nullptr && *home != '\0') {
    if (real == fs::weakly_canonical(fs::path(home), ec))
      refuse(t, "is the home folder", "a folder of its own");
  }
  if (is_ancestor_or_same(real, cwd))
    refuse(t, "is the working folder or holds it", "a folder of its own, e.g. out/NAME");
  if (const std::string input = input_file_at_or_under(t.path.string()); !input.empty()) {
    refuse(t,
           input == real.string() ? "is an input of this run"
                                  : fmt::format("holds {}, an input of this run", input),
           "a path of its own; --force never replaces an input");
  }
}

const char* file_kind_of(const struct stat& st) {
  if (S_ISLNK(st.st_mode)) return "a symbolic link";
  if (S_ISCHR(st.st_mode)) return "a character device";
  if (S_ISBLK(st.st_mode)) return "a block device";
  if (S_ISFIFO(st.st_mode)) return "a FIFO";
  if (S_ISSOCK(st.st_mode)) return "a socket";
  return "not a regular file or folder";
}

}  // namespace

void remove_tree_signal_safe(const char* path) {
  const int saved = errno;
  remove_at(AT_FDCWD, path, 0);
  errno = saved;
}

OutputTarget output_target(const std::string& flag, const std::string& path, OutputShape shape,
                           bool force) {
  OutputTarget t;
  t.flag = flag;
  const fs::path given(path);
  t.names_a_folder = path.ends_with('/') || given.filename() == "." || given.filename() == "..";
  fs::path p = fs::absolute(given).lexically_normal();
  if (p.filename().empty() && p.has_parent_path() && p != p.root_path()) p = p.parent_path();
  t.path = p;
  t.shape = shape;
  t.force = force;
  return t;
}

const char* output_marker_text() {
  return "This folder was written by kvsim. kvsim replaces only folders that carry this file.\n";
}

void refuse_unless_writable(const OutputTarget& t) {
  if (t.shape == OutputShape::file && t.names_a_folder)
    refuse(t, "is written as a folder (it ends in '/' or is . or ..), and this output is one file",
           "a file name such as run.json");
  refuse_protected(t);
  struct stat st {};
  if (::lstat(t.path.c_str(), &st) != 0) {
    if (errno == ENOENT) return;  // nothing there: created new
    refuse(t, fmt::format("cannot be examined: {}", std::strerror(errno)),
           "a path kvsim can reach");
  }
  const bool folder = t.shape == OutputShape::folder;
  const char* what = folder ? "a folder" : "a file";
  if (S_ISDIR(st.st_mode)) {
    if (!folder)
      refuse(t, "is a folder, and this output is one file",
             "a file name; --force replaces only a user's file with a file");
    std::error_code ec;
    const fs::path marker = t.path / kOutputMarker;
    struct stat ms {};
    if (::lstat(marker.c_str(), &ms) == 0 && S_ISREG(ms.st_mode)) return;
    if (fs::is_empty(t.path, ec) && !ec) return;
    if (t.force) return;
    refuse(t, "is a folder kvsim did not write (it has no .kvsim marker) and is not empty",
           "another --out, or --force to replace it");
  }
  if (S_ISREG(st.st_mode)) {
    if (folder)
      refuse(t, "exists and is not a folder kvsim wrote (it is a file)",
             "another --out; --force replaces only a user's folder with a folder");
    if (t.kvsim_wrote_file && t.kvsim_wrote_file(t.path)) return;
    if (t.force) return;
    refuse(t, "exists and is not a file kvsim wrote",
           t.force_flag ? fmt::format("another {}, or --force to replace it", t.flag)
                        : fmt::format("another {} (a new file, or one kvsim wrote)", t.flag));
  }
  refuse(t, fmt::format("is {}; kvsim never replaces one, even with --force", file_kind_of(st)),
         fmt::format("{} of its own", what));
}

std::string temporary_sibling(const fs::path& final_path) {
  return (final_path.parent_path() /
          fmt::format(".{}.tmp-{}", final_path.filename().string(), ::getpid()))
      .string();
}

void install_cleanup_handlers() {
  static std::once_flag once;
  std::call_once(once, [] {
    for (int sig : kCleanupSignals) {
      struct sigaction old {};
      if (::sigaction(sig, nullptr, &old) != 0) continue;
      // A signal the caller chose to ignore (nohup, a shell's trap '' PIPE)
      // or handles itself stays as it was.
      if (old.sa_handler != SIG_DFL || (old.sa_flags & SA_SIGINFO) != 0) continue;
      struct sigaction sa {};
      sa.sa_handler = remove_temporaries_and_reraise;
      sigemptyset(&sa.sa_mask);
      ::sigaction(sig, &sa, nullptr);
    }
  });
}

TemporaryPath::TemporaryPath(std::string path) : path_(std::move(path)) {
  install_cleanup_handlers();
  char* copy = ::strdup(path_.c_str());
  for (size_t i = 0; i < kSlots && copy != nullptr; ++i) {
    char* expected = nullptr;
    if (g_temp_paths[i].compare_exchange_strong(expected, copy)) {
      slot_ = static_cast<int>(i);
      return;
    }
  }
  std::free(copy);  // every slot taken: the destructor still removes it
}

TemporaryPath::~TemporaryPath() {
  remove_now();
}

void TemporaryPath::remove_now() {
  if (path_.empty()) return;
  std::error_code ec;
  fs::remove_all(path_, ec);
  release();
}

TemporaryPath::TemporaryPath(TemporaryPath&& other) noexcept
    : path_(std::move(other.path_)), slot_(other.slot_) {
  other.path_.clear();
  other.slot_ = -1;
}

TemporaryPath& TemporaryPath::operator=(TemporaryPath&& other) noexcept {
  if (this != &other) {
    remove_now();
    path_ = std::move(other.path_);
    slot_ = other.slot_;
    other.path_.clear();
    other.slot_ = -1;
  }
  return *this;
}

void TemporaryPath::release() {
  if (slot_ >= 0) {
    std::free(g_temp_paths[static_cast<size_t>(slot_)].exchange(nullptr));
    slot_ = -1;
  }
  path_.clear();  // kept: nothing is removed once released
}

void register_child_process(pid_t pid) {
  install_cleanup_handlers();
  for (auto& slot : g_children) {
    pid_t expected = 0;
    if (slot.compare_exchange_strong(expected, pid)) return;
  }
}

void unregister_child_process(pid_t pid) {
  for (auto& slot : g_children) {
    pid_t expected = pid;
    if (slot.compare_exchange_strong(expected, 0)) return;
  }
}

void write_file_atomically(const std::string& path, const std::string& contents) {
  TemporaryPath tmp(temporary_sibling(fs::path(path)));
  {
    // A full disk or a read-only folder is the environment's fault: a
    // filesystem_error with the OS's text (exit 2), not an internal error.
    std::ofstream out(tmp.path(), std::ios::binary | std::ios::trunc);
    if (!out)
      throw fs::filesystem_error("cannot write", fs::path(path),
                                 std::error_code(errno, std::generic_category()));
    out << contents;
    out.flush();
    if (!out)
      throw fs::filesystem_error("cannot write", fs::path(path),
                                 std::error_code(errno ? errno : EIO, std::generic_category()));
  }
  fs::rename(tmp.path(), path);
  tmp.release();
}

}  // namespace kvsim
