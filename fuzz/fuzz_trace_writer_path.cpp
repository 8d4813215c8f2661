// The trace writer's path handling under the output rule
// (reports/output_rule.hpp): `kvsim run --trace PATH [--force]` for any PATH.
// Each input is a path, relative to a fresh sandbox folder holding one of
// every kind of thing a path may name: a user's file, a user's folder, a
// folder kvsim marked, a trace kvsim wrote, a FIFO, symbolic links (to a
// file, to a folder, dangling), a file this process read as input, and a
// device node when running as root. The first byte's low bit is --force.
// Inputs that leave the sandbox (absolute, or ".." past it) are skipped.
//
// A finding is any of: an exception other than OutputRefused or a
// filesystem_error; anything in the sandbox changed that the rule protects
// (everything but a user's regular file at the path, with --force); a
// temporary name left behind; a write that succeeded yet left no trace
// kvsim recognises as its own at the path.
#include <fcntl.h>
#include <sys/stat.h>
#include <sys/sysmacros.h>
#include <unistd.h>

#include <cstddef>
#include <cstdint>
#include <cstdlib>
#include <filesystem>
#include <fstream>
#include <map>
#include <sstream>
#include <string>

#include "base/input_file.hpp"
#include "reports/output_rule.hpp"
#include "reports/trace_writer.hpp"

namespace fs = std::filesystem;

namespace {

const fs::path& sandbox() {
  static const fs::path dir = [] {
    std::string tmpl = (fs::temp_directory_path() / "kvsim-fuzz-paths-XXXXXX").string();
    if (mkdtemp(tmpl.data()) == nullptr) std::abort();
    return fs::path(tmpl);
  }();
  return dir;
}

void write_text(const fs::path& p, const std::string& text) {
  std::ofstream(p, std::ios::binary) << text;
}

std::string read_text(const fs::path& p) {
  std::ifstream in(p, std::ios::binary);
  std::stringstream s;
  s << in.rdbuf();
  return s.str();
}

// A trace as kvsim writes one (the writer's own output, made once).
const std::string& kvsim_trace_text() {
  static const std::string text = [] {
    const fs::path p = sandbox().parent_path() / (sandbox().filename().string() + "-seed.json");
    {
      kvsim::TraceRunSink sink(p.string(), "seed");
      sink.close();
    }
    std::string t = read_text(p);
    fs::remove(p);
    return t;
  }();
  return text;
}

void make_sandbox() {
  const fs::path& d = sandbox();
  std::error_code ec;
  for (const auto& e : fs::directory_iterator(d, ec)) fs::remove_all(e.path(), ec);
  write_text(d / "user.txt", "a user's notes\n");
  fs::create_directories(d / "folder" / "sub");
  write_text(d / "folder" / "report.md", "# mine\n");
  fs::create_directories(d / "marked");
  write_text(d / "marked" / kvsim::kOutputMarker, kvsim::output_marker_text());
  write_text(d / "old.json", kvsim_trace_text());
  write_text(d / "input.yaml", "name: the scenario\n");
  ::mkfifo((d / "fifo").c_str(), 0644);
  fs::create_symlink("user.txt", d / "link-to-file", ec);
  fs::create_symlink("folder", d / "link-to-folder", ec);
  fs::create_symlink("nowhere", d / "dangling", ec);
  if (::geteuid() == 0) ::mknod((d / "null").c_str(), S_IFCHR | 0666, makedev(1, 3));
  // Remembered once: the registry lives as long as the process.
  static const bool remembered = [&] {
    kvsim::remember_input_file((d / "input.yaml").string());
    return true;
  }();
  (void)remembered;
}

// Every entry's kind and (for files) contents, by path relative to the sandbox.
std::map<std::string, std::string> snapshot() {
  std::map<std::string, std::string> out;
  for (auto it = fs::recursive_directory_iterator(sandbox());
       it != fs::recursive_directory_iterator(); ++it) {
    struct stat st {};
    if (::lstat(it->path().c_str(), &st) != 0) continue;
    std::string v = std::to_string(st.st_mode & S_IFMT);
    if (S_ISREG(st.st_mode)) v += ":" + read_text(it->path());
    if (S_ISLNK(st.st_mode)) v += ":" + fs::read_symlink(it->path()).string();
    out[fs::relative(it->path(), sandbox()).string()] = v;
  }
  return out;
}

}  // namespace

extern "C" int LLVMFuzzerTestOneInput(const uint8_t* data, size_t size) {
  if (size < 2 || size > 512) return 0;
  const bool force = (data[0] & 1) != 0;
  std::string relative(reinterpret_cast<const char*>(data + 1), size - 1);
  if (relative.find('\0') != std::string::npos || relative.empty() || relative[0] == '/') return 0;
  const fs::path target = (sandbox() / relative).lexically_normal();
  const std::string root = sandbox().string() + "/";
  if (target.string().rfind(root, 0) != 0) return 0;  // outside the sandbox
  // Through a link to a folder the path stays in the sandbox too.
  make_sandbox();
  const auto before = snapshot();
  struct stat st {};
  const bool was_user_file = ::lstat(target.c_str(), &st) == 0 && S_ISREG(st.st_mode) &&
                             kvsim::input_file_at_or_under(target.string()).empty();
  bool wrote = false;
  try {
    kvsim::TraceRunSink sink(target.string(), "fuzz", 64, force);
    sink.close();
    wrote = true;
  } catch (const kvsim::OutputRefused&) {
  } catch (const fs::filesystem_error&) {
  }
  auto after = snapshot();
  // The one change allowed: the trace at the target, the entry its final
  // name makes in its folder (links on the way are followed, as the
  // writer's rename follows them).
  std::error_code ec;
  const fs::path folder = fs::weakly_canonical(target.parent_path(), ec);
  const std::string rel = ec ? target.lexically_relative(sandbox()).string()
                             : (folder / target.filename())
                                   .lexically_relative(fs::weakly_canonical(sandbox(), ec))
                                   .string();
  if (wrote) {
    if (!kvsim::TraceRunSink::written_by_kvsim(target)) std::abort();
    if (before.count(rel) && !(force && was_user_file) && rel != "old.json") {
      // Written over something that was there: only a user's file with
      // --force, or a trace kvsim wrote, may be.
      std::abort();
    }
    after.erase(rel);
  }
  auto expected = before;
  if (wrote) expected.erase(rel);
  // A temporary name of this process's (".NAME.tmp-PID") left behind; a
  // name the input itself chose may hold ".tmp-" too.
  const std::string temporary = ".tmp-" + std::to_string(::getpid());
  for (const auto& [name, value] : after)
    if (name.ends_with(temporary)) std::abort();
  for (const auto& [name, value] : expected) {
    const auto it = after.find(name);
    if (it == after.end() || it->second != value) std::abort();  // a protected entry changed
  }
  return 0;
}
