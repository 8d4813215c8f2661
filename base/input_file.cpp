#include "base/input_file.hpp"

#include <filesystem>

namespace kvsim {

std::string input_file_problem(const std::string& path) {
  namespace fs = std::filesystem;
  std::error_code ec;
  const auto status = fs::status(path, ec);
  if (fs::is_regular_file(status)) return "";
  if (!fs::exists(status)) return "not found";
  if (fs::is_directory(status)) return "is a directory, not a regular file";
  return "is not a regular file (a device, FIFO or socket)";
}

}  // namespace kvsim
