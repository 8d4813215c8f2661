#include "reports/output_dir.hpp"

#include <fmt/format.h>
#include <unistd.h>

#include <filesystem>
#include <fstream>
#include <stdexcept>

namespace kvsim {
namespace fs = std::filesystem;

OutputDir::OutputDir(std::string final_path) : final_(std::move(final_path)) {
  fs::path p = fs::absolute(fs::path(final_)).lexically_normal();
  if (p.filename().empty()) p = p.parent_path();
  final_ = p.string();
  fs::create_directories(p.parent_path());
  temp_ = (p.parent_path() / fmt::format(".{}.tmp-{}", p.filename().string(), getpid())).string();
  fs::remove_all(temp_);
  fs::create_directories(temp_);
}

OutputDir::~OutputDir() {
  if (!committed_) {
    std::error_code ec;
    fs::remove_all(temp_, ec);
  }
}

std::string OutputDir::file(const std::string& name) const {
  return (fs::path(temp_) / name).string();
}

void OutputDir::commit() {
  std::error_code ec;
  const std::string old = fmt::format("{}.old-{}", final_, getpid());
  if (fs::exists(final_, ec)) fs::rename(final_, old);
  fs::rename(temp_, final_, ec);
  if (ec) {
    if (fs::exists(old)) fs::rename(old, final_);
    throw std::runtime_error(fmt::format("cannot move output into {}: {}", final_, ec.message()));
  }
  committed_ = true;
  fs::remove_all(old, ec);
}

void write_file_atomically(const std::string& path, const std::string& contents) {
  const std::string tmp = fmt::format("{}.tmp-{}", path, getpid());
  {
    std::ofstream out(tmp, std::ios::binary | std::ios::trunc);
    if (!out) throw std::runtime_error(fmt::format("cannot write {}", tmp));
    out << contents;
    out.flush();
    if (!out) throw std::runtime_error(fmt::format("cannot write {}", tmp));
  }
  fs::rename(tmp, path);
}

}  // namespace kvsim
