#include "base/input_file.hpp"

#include <fcntl.h>
#include <sys/stat.h>
#include <unistd.h>

#include <algorithm>
#include <cerrno>
#include <cstring>
#include <filesystem>
#include <mutex>
#include <vector>

namespace kvsim {
namespace {
namespace fs = std::filesystem;

struct InputFile {
  dev_t device;
  ino_t inode;
  std::string canonical;
};

std::mutex g_inputs_mutex;
std::vector<InputFile>& inputs() {
  static std::vector<InputFile> all;
  return all;
}

}  // namespace

void remember_input_file(const std::string& path) {
  struct stat st {};
  if (::stat(path.c_str(), &st) != 0 || !S_ISREG(st.st_mode)) return;
  std::error_code ec;
  std::string canonical = fs::weakly_canonical(fs::absolute(path, ec), ec).string();
  std::lock_guard<std::mutex> lock(g_inputs_mutex);
  for (const InputFile& f : inputs())
    if (f.device == st.st_dev && f.inode == st.st_ino) return;
  inputs().push_back({st.st_dev, st.st_ino, std::move(canonical)});
}

std::string input_file_at_or_under(const std::string& path) {
  std::error_code ec;
  const fs::path target = fs::weakly_canonical(fs::absolute(path, ec), ec);
  struct stat st {};
  const bool exists = ::stat(path.c_str(), &st) == 0;
  std::lock_guard<std::mutex> lock(g_inputs_mutex);
  for (const InputFile& f : inputs()) {
    if (exists && f.device == st.st_dev && f.inode == st.st_ino) return f.canonical;
    // A folder that holds the input: its path is a prefix of the input's.
    const fs::path input(f.canonical);
    auto t = target.begin();
    auto i = input.begin();
    for (; t != target.end() && i != input.end() && *t == *i; ++t, ++i) {
    }
    if (t == target.end() || (std::next(t) == target.end() && t->empty())) return f.canonical;
  }
  return "";
}

std::vector<std::string> input_files_read() {
  std::vector<std::string> out;
  {
    std::lock_guard<std::mutex> lock(g_inputs_mutex);
    for (const InputFile& f : inputs()) out.push_back(f.canonical);
  }
  std::sort(out.begin(), out.end());
  return out;
}

std::string input_file_problem(const std::string& path) {
  std::error_code ec;
  const auto status = fs::status(path, ec);
  if (fs::is_regular_file(status)) {
    remember_input_file(path);
    return "";
  }
  if (!fs::exists(status)) return "not found";
  if (fs::is_directory(status)) return "is a directory, not a regular file";
  return "is not a regular file (a device, FIFO or socket)";
}

std::string read_input_file(const std::string& path, std::string& text) {
  text.clear();
  if (std::string problem = input_file_problem(path); !problem.empty()) return problem;
  const int fd = ::open(path.c_str(), O_RDONLY | O_CLOEXEC);
  if (fd < 0) return std::string("cannot be opened: ") + std::strerror(errno);
  char buffer[1 << 16];
  while (true) {
    const ssize_t n = ::read(fd, buffer, sizeof buffer);
    if (n < 0 && errno == EINTR) continue;
    if (n < 0) {
      const int err = errno;
      ::close(fd);
      text.clear();
      return std::string("cannot be read: ") + std::strerror(err);
    }
    if (n == 0) break;
    text.append(buffer, static_cast<size_t>(n));
  }
  ::close(fd);
  return "";
}

void strip_utf8_bom(std::string& line) {
  if (line.rfind("\xEF\xBB\xBF", 0) == 0) line.erase(0, 3);
}

}  // namespace kvsim
