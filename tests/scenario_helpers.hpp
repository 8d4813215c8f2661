#pragma once
// Shared by the engine and CLI tests: build scenarios from text, capture the
// rows a run streams, run the kvsim binary.
#include <array>
#include <cstdio>
#include <string>
#include <vector>

#include "sim/engine/run_sink.hpp"
#include "sim/scenario/scenario.hpp"
#include "tests/support/test_paths.hpp"

namespace kvsim::testing {

inline std::string configs_dir() {
  return std::string(KVSIM_SOURCE_DIR) + "/configs";
}

inline ScenarioSpec scenario_from_text(const std::string& yaml) {
  return load_scenario_text(yaml, "test.yaml", configs_dir());
}

struct CapturingSink final : RunSink {
  std::vector<RequestRow> request_rows;
  std::vector<TimelineRow> timeline_rows;
  void request(const RequestRow& row) override { request_rows.push_back(row); }
  void timeline(const TimelineRow& row) override { timeline_rows.push_back(row); }
};

struct CommandResult {
  int exit_code = -1;
  std::string output;  // stdout and stderr together
};

// Runs a shell command, capturing its output.
inline CommandResult run_command(const std::string& command) {
  CommandResult r;
  FILE* pipe = popen((command + " 2>&1").c_str(), "r");
  if (!pipe) return r;
  std::array<char, 4096> buf{};
  size_t n;
  while ((n = fread(buf.data(), 1, buf.size(), pipe)) > 0) r.output.append(buf.data(), n);
  const int status = pclose(pipe);
  r.exit_code = WIFEXITED(status) ? WEXITSTATUS(status) : -1;
  return r;
}

}  // namespace kvsim::testing
