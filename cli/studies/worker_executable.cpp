#include "cli/studies/worker_executable.hpp"

#include <filesystem>
#include <mutex>

namespace kvsim {
namespace {
std::mutex g_mutex;
std::string g_executable;  // empty: /proc/self/exe
}  // namespace

std::string worker_executable() {
  {
    std::lock_guard lock(g_mutex);
    if (!g_executable.empty()) return g_executable;
  }
  return std::filesystem::read_symlink("/proc/self/exe").string();
}

void set_worker_executable(std::string path) {
  std::lock_guard lock(g_mutex);
  g_executable = std::move(path);
}

}  // namespace kvsim
