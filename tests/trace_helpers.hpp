#pragma once
// Shared by the trace tests: temporary trace files, parsing a `workload:` map
// with a trace, draining a source.
#include <gtest/gtest.h>
#include <unistd.h>
#include <yaml-cpp/yaml.h>

#include <filesystem>
#include <fstream>
#include <memory>
#include <string>
#include <vector>

#include "workloads/workload.hpp"

namespace kvsim::testing {

// A file under a per-process temporary folder, removed with the object.
class TempTrace {
 public:
  TempTrace(const std::string& name, const std::string& text) {
    const auto dir =
        std::filesystem::temp_directory_path() / ("kvsim-trace-test-" + std::to_string(::getpid()));
    std::filesystem::create_directories(dir);
    path_ = (dir / name).string();
    std::ofstream(path_, std::ios::binary) << text;
  }
  ~TempTrace() {
    std::error_code ignored;
    std::filesystem::remove(path_, ignored);
    // The folder goes with its last file (remove() of a non-empty folder fails).
    std::filesystem::remove(std::filesystem::path(path_).parent_path(), ignored);
  }
  TempTrace(const TempTrace&) = delete;
  TempTrace& operator=(const TempTrace&) = delete;
  const std::string& path() const { return path_; }

 private:
  std::string path_;
};

// `workload: {trace: {format, path, <extra>}}` parsed; nullptr with the
// diagnostics in `errors` when it does not parse.
inline std::shared_ptr<const WorkloadSpec> parse_trace(const std::string& format,
                                                       const std::string& path,
                                                       const std::string& extra,
                                                       std::vector<std::string>* errors = nullptr) {
  config::LoadContext ctx;
  const std::string yaml = "trace: {format: " + format + ", path: '" + path + "'" +
                           (extra.empty() ? "" : ", ") + extra + "}";
  auto spec = parse_workload(config::Node(YAML::Load(yaml), "workload", "test.yaml", &ctx));
  for (const auto& d : ctx.diagnostics.all()) {
    if (errors)
      errors->push_back(d.format());
    else
      ADD_FAILURE() << d.format();
  }
  return spec;
}

inline std::vector<Request> drain_all(RequestSource& source) {
  std::vector<Request> out;
  while (source.next_arrival()) out.push_back(source.take());
  return out;
}

}  // namespace kvsim::testing
