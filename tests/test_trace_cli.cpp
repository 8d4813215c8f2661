// `kvsim run` on a trace scenario: a malformed line under on_error: fail stops
// the run with exit code 2, an error at the trace file's line and no output
// folder; under skip the run completes and metrics.json counts the line.
#include <gtest/gtest.h>
#include <unistd.h>

#include <filesystem>
#include <fstream>
#include <nlohmann/json.hpp>
#include <string>

#include "tests/scenario_helpers.hpp"
#include "tests/support/test_paths.hpp"

namespace kvsim::KVSIM_TEST_FILE_SCOPE {
namespace {

namespace fs = std::filesystem;

class TraceCli : public ::testing::Test {
 protected:
  void SetUp() override {
    dir_ = fs::temp_directory_path() / ("kvsim-trace-cli-" + std::to_string(::getpid()));
    fs::remove_all(dir_);
    fs::create_directories(dir_ / "traces");
    // Line 4 is malformed (a negative prompt length).
    std::ofstream(dir_ / "traces" / "small.csv")
        << "arrived_at,num_prefill_tokens,num_decode_tokens\n"
           "0.0,100,8\n"
           "0.1,200,8\n"
           "0.2,-3,8\n"
           "0.3,300,8\n";
  }
  void TearDown() override { fs::remove_all(dir_); }

  std::string write_scenario(const std::string& on_error) {
    const fs::path path = dir_ / ("scenario-" + on_error + ".yaml");
    std::ofstream(path) << "name: trace-cli\n"
                           "device: ascend-910b2\n"
                           "model: llama-3.2-1b\n"
                           "workload:\n"
                           "  trace:\n"
                           "    format: prefill_decode_csv\n"
                           "    path: traces/small.csv\n"  // relative to this file
                           "    on_error: "
                        << on_error << "\n";
    return path.string();
  }

  testing::CommandResult run(const std::string& scenario, const fs::path& out) {
    return testing::run_command(std::string(KVSIM_BINARY) + " run " + scenario + " --quiet --out " +
                                out.string());
  }

  fs::path dir_;
};

TEST_F(TraceCli, FailStopsWithExitTwoAtTheTraceLine) {
  const fs::path out = dir_ / "out-fail";
  const auto r = run(write_scenario("fail"), out);
  EXPECT_EQ(r.exit_code, 2) << r.output;
  const std::string where = (dir_ / "traces" / "small.csv").string() + ":4:1: workload.trace:";
  EXPECT_NE(r.output.find(where), std::string::npos) << r.output;
  EXPECT_NE(r.output.find("num_prefill_tokens is -3"), std::string::npos) << r.output;
  EXPECT_FALSE(fs::exists(out));  // no half-written folder
}

TEST_F(TraceCli, SkipCompletesAndCountsInMetrics) {
  const fs::path out = dir_ / "out-skip";
  const auto r = run(write_scenario("skip"), out);
  ASSERT_EQ(r.exit_code, 0) << r.output;
  std::ifstream in(out / "metrics.json");
  const auto metrics = nlohmann::json::parse(in);
  EXPECT_EQ(metrics["workload"]["skipped_records"], 1);
  EXPECT_EQ(metrics["requests"]["completed"], 3);
}

}  // namespace
}  // namespace kvsim::KVSIM_TEST_FILE_SCOPE
