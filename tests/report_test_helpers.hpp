#pragma once
// Shared by the compare, capacity, check and HTML report tests: a temporary
// folder per test, small scenarios that run in milliseconds, file helpers.
#include <gtest/gtest.h>
#include <unistd.h>

#include <filesystem>
#include <fstream>
#include <sstream>
#include <string>

#include "scenario_helpers.hpp"
#include "tests/support/test_paths.hpp"

namespace kvsim::testing {

// A synthetic open-loop workload on a small model: fast, and its request
// stream depends only on the seed and the workload keys.
inline std::string small_scenario(const std::string& name, int requests = 40,
                                  double rate_per_s = 20) {
  return "name: " + name + R"(
description: a small scenario for report tests
seed: 5
device: ascend-910b2
model: llama-3.2-1b
kv_cache: {policy: paged, block_size: 64, prefix_caching: true}
scheduler: {max_num_seqs: 64, max_batched_tokens: 4096}
workload:
  kind: synthetic
  requests: )" +
         std::to_string(requests) +
         R"(
  arrival: {process: poisson, rate_per_s: )" +
         std::to_string(rate_per_s) + R"(}
  input_tokens: {dist: uniform, min: 64, max: 1024}
  output_tokens: {dist: uniform, min: 8, max: 96}
  shared_prefix: {groups: 2, tokens: 256}
)";
}

class TempFolderTest : public ::testing::Test {
 protected:
  void SetUp() override {
    const auto* info = ::testing::UnitTest::GetInstance()->current_test_info();
    dir_ = std::filesystem::temp_directory_path() /
           (std::string("kvsim-") + info->test_suite_name() + "-" + info->name() + "-" +
            std::to_string(getpid()));  // two builds of the suite may run at once
    std::filesystem::remove_all(dir_);
    std::filesystem::create_directories(dir_);
  }
  void TearDown() override { std::filesystem::remove_all(dir_); }

  std::string write(const std::string& name, const std::string& text) const {
    const auto p = dir_ / name;
    std::ofstream(p) << text;
    return p.string();
  }
  std::string path(const std::string& name) const { return (dir_ / name).string(); }
  static std::string read(const std::string& path) {
    std::ifstream in(path);
    std::stringstream s;
    s << in.rdbuf();
    return s.str();
  }
  static CommandResult kvsim(const std::string& args) {
    return run_command(std::string(KVSIM_BINARY) + " " + args);
  }

  std::filesystem::path dir_;
};

}  // namespace kvsim::testing
