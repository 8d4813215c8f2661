// The kvsim command line: exit codes, one-line errors with FILE:LINE:COL and
// key path, no output folder left behind on bad input, byte-identical reruns.
#include <gtest/gtest.h>

#include <filesystem>
#include <fstream>
#include <iostream>
#include <iterator>
#include <sstream>

#include <fmt/format.h>
#include <unistd.h>

#include "scenario_helpers.hpp"
#include "tests/support/test_paths.hpp"

namespace kvsim::KVSIM_TEST_FILE_SCOPE {
namespace {
namespace fs = std::filesystem;
using testing::run_command;

const std::string kBinary = KVSIM_BINARY;

class Cli : public ::testing::Test {
 protected:
  void SetUp() override {
    // The process id keeps two builds running the same tests apart.
    dir_ = fs::temp_directory_path() /
           fmt::format("kvsim-cli-{}-{}",
                       ::testing::UnitTest::GetInstance()->current_test_info()->name(), getpid());
    fs::remove_all(dir_);
    fs::create_directories(dir_);
  }
  void TearDown() override { fs::remove_all(dir_); }

  // Writes a scenario whose base is valid; `body` replaces or adds keys.
  std::string write(const std::string& name, const std::string& text) {
    const fs::path p = dir_ / name;
    std::ofstream(p) << text;
    return p.string();
  }
  testing::CommandResult run(const std::string& args) { return run_command(kBinary + " " + args); }
  std::string out() const { return (dir_ / "out").string(); }

  fs::path dir_;
};

constexpr const char* kValid = R"(name: cli
device: ascend-910b2
model: llama-3-8b
kv_cache: {policy: paged, block_size: 128}
workload: {kind: synthetic, requests: 5, arrival: {process: poisson, rate_per_s: 2},
           input_tokens: 64, output_tokens: 8}
)";

TEST_F(Cli, ValidScenarioRunsAndWritesItsReport) {
  const std::string f = write("ok.yaml", kValid);
  const auto r = run("run " + f + " --quiet --out " + out());
  EXPECT_EQ(r.exit_code, 0) << r.output;
  for (const char* file : {"metrics.json", "requests.csv", "timeline.csv", "report.md"}) {
    EXPECT_TRUE(fs::exists(fs::path(out()) / file)) << file;
  }
  // Nothing temporary left next to the output folder.
  for (const auto& e : fs::directory_iterator(dir_)) {
    EXPECT_EQ(e.path().filename().string().find(".out.tmp"), std::string::npos) << e.path();
  }
}

struct BadCase {
  const char* name;
  const char* yaml;
  const char* expected;  // a fragment of the one-line error (after the file name)
};

TEST_F(Cli, BadInputIsExitCode2WithFileLineColKeyPathAndNoOutput) {
  const BadCase cases[] = {
      {"unknown_key",
       "name: x\ndevice: ascend-910b2\nmodel: llama-3-8b\nkv_cache: {policy: paged, block_sise: "
       "64}\n",
       ":4:27: kv_cache.block_sise: unknown key 'block_sise', did you mean 'block_size'?"},
      {"wrong_type",
       "name: x\ndevice: ascend-910b2\nmodel: llama-3-8b\nscheduler:\n  max_num_seqs: many\n",
       ":5:17: scheduler.max_num_seqs: expected an integer, got 'many'"},
      {"negative_size",
       "name: x\ndevice: ascend-910b2\nmodel: llama-3-8b\nkv_cache:\n  swap_space: -4GiB\n",
       ":5:15: kv_cache.swap_space: '-4GiB' is negative"},
      {"fraction",
       "name: x\ndevice: ascend-910b2\nmodel: llama-3-8b\nkv_cache:\n  memory_fraction: 1.5\n",
       ":5:20: kv_cache.memory_fraction: 1.5 is out of range (a number in [0.01, 1])"},
      {"does_not_fit", "name: x\ndevice: ascend-910b4\nmodel: qwen3-32b\n",
       ":3:8: model: qwen3-32b does not fit on ascend-910b4"},
      {"unknown_device", "name: x\ndevice: ascend-91b2\nmodel: llama-3-8b\n",
       ":2:9: device: no device named 'ascend-91b2', did you mean 'ascend-910b2'?"},
  };
  for (const BadCase& c : cases) {
    SCOPED_TRACE(c.name);
    std::string yaml = c.yaml;
    if (yaml.find("workload") == std::string::npos) {
      yaml +=
          "workload: {kind: synthetic, requests: 5, arrival: {process: poisson, rate_per_s: 2}, "
          "input_tokens: 64, output_tokens: 8}\n";
    }
    const std::string f = write(fmt::format("{}.yaml", c.name), yaml);
    const auto r = run("run " + f + " --quiet --out " + out());
    EXPECT_EQ(r.exit_code, 2) << r.output;
    EXPECT_NE(r.output.find(fmt::format("kvsim: error: {}{}", f, c.expected)), std::string::npos)
        << r.output;
    EXPECT_FALSE(fs::exists(out())) << "no output folder on bad input";
  }
}

TEST_F(Cli, AllErrorsOfAFileAreReportedTogether) {
  const std::string f =
      write("three.yaml",
            "name: x\ndevice: ascend-910b2\nmodel: llama-3-8b\n"
            "kv_cache: {block_size: 0, dtyp: fp16}\nscheduler: {max_num_seqs: -1}\n");
  const auto r = run("run " + f + " --quiet --out " + out());
  EXPECT_EQ(r.exit_code, 2);
  int lines = 0;
  std::istringstream in(r.output);
  for (std::string line; std::getline(in, line);)
    lines += line.rfind("kvsim: error: ", 0) == 0 ? 1 : 0;
  EXPECT_GE(lines, 4) << r.output;  // block_size, dtyp, max_num_seqs, missing workload
  EXPECT_NE(r.output.find("kv_cache.block_size"), std::string::npos);
  EXPECT_NE(r.output.find("kv_cache.dtyp"), std::string::npos);
  EXPECT_NE(r.output.find("scheduler.max_num_seqs"), std::string::npos);
}

TEST_F(Cli, MissingFileAndBadFlagsAreExitCode2) {
  auto r = run("run " + (dir_ / "nope.yaml").string() + " --out " + out());
  EXPECT_EQ(r.exit_code, 2) << r.output;
  EXPECT_NE(r.output.find("nope.yaml:0:0: file not found"), std::string::npos) << r.output;
  r = run("run --no-such-flag");
  EXPECT_EQ(r.exit_code, 2) << r.output;
  const std::string f = write("ok.yaml", kValid);
  r = run("run " + f + " --quiet --out " + out() + " --set kv_cache.block_size=abc");
  EXPECT_EQ(r.exit_code, 2) << r.output;
  EXPECT_NE(
      r.output.find("--set kv_cache.block_size:1:1: kv_cache.block_size: expected an integer"),
      std::string::npos)
      << r.output;
  EXPECT_FALSE(fs::exists(out()));
}

TEST_F(Cli, SetOverridesAKeyAfterLoading) {
  const std::string f = write("ok.yaml", kValid);
  const auto r = run("run " + f + " --quiet --out " + out() + " --set kv_cache.block_size=64");
  ASSERT_EQ(r.exit_code, 0) << r.output;
  std::ifstream in(fs::path(out()) / "metrics.json");
  std::stringstream ss;
  ss << in.rdbuf();
  EXPECT_NE(ss.str().find("\"block_size\": 64"), std::string::npos);
}

TEST_F(Cli, FailedExpectationIsExitCode1) {
  const std::string f =
      write("expect.yaml", std::string(kValid) + "expect:\n  requests.completed: {equals: 6}\n");
  const auto r = run("run " + f + " --quiet --out " + out());
  EXPECT_EQ(r.exit_code, 1) << r.output;
  EXPECT_NE(r.output.find("expect.requests.completed: 5 is not equal to 6"), std::string::npos)
      << r.output;
  const std::string bad =
      write("badexpect.yaml", std::string(kValid) + "expect:\n  requests.complted: {min: 1}\n");
  EXPECT_EQ(run("run " + bad + " --quiet --out " + out()).exit_code, 2);
}

std::string metrics_without_wall_time(const fs::path& file) {
  std::ifstream in(file);
  std::string text, line;
  while (std::getline(in, line)) {
    if (line.find("\"wall_s\"") == std::string::npos) text += line + "\n";
  }
  return text;
}

TEST_F(Cli, SameScenarioTwiceGivesByteIdenticalMetricsApartFromWallTime) {
  const std::string scenario = testing::configs_dir() + "/scenarios/default.yaml";
  ASSERT_EQ(run("run " + scenario + " --quiet --out " + (dir_ / "a").string()).exit_code, 0);
  ASSERT_EQ(run("run " + scenario + " --quiet --out " + (dir_ / "b").string()).exit_code, 0);
  const std::string a = metrics_without_wall_time(dir_ / "a" / "metrics.json");
  EXPECT_GT(a.size(), 500u);
  EXPECT_EQ(a, metrics_without_wall_time(dir_ / "b" / "metrics.json"));
  // The streamed files are deterministic too.
  for (const char* f : {"requests.csv", "timeline.csv"}) {
    std::ifstream x(dir_ / "a" / f), y(dir_ / "b" / f);
    std::stringstream sx, sy;
    sx << x.rdbuf();
    sy << y.rdbuf();
    EXPECT_EQ(sx.str(), sy.str()) << f;
  }
}

TEST_F(Cli, ValidateAcceptsEveryShippedConfig) {
  std::string files;
  // Scenarios replaying ../shared/data are left out where that folder is absent.
  const bool shared_data = fs::exists(KVSIM_SHARED_DATA_DIR);
  for (const char* kind : {"devices", "models", "scenarios"}) {
    for (const auto& e : fs::directory_iterator(fs::path(testing::configs_dir()) / kind)) {
      std::ifstream in(e.path());
      const std::string text((std::istreambuf_iterator<char>(in)),
                             std::istreambuf_iterator<char>());
      if (!shared_data && text.find("shared/data/") != std::string::npos) {
        std::cout << "[ skipped  ] " << e.path() << ": " << KVSIM_SHARED_DATA_DIR << " is absent\n";
        continue;
      }
      files += ' ';  // (not " " + string: g++ 12 raises a false -Wrestrict)
      files += e.path().string();
    }
  }
  const auto r = run("validate" + files);
  EXPECT_EQ(r.exit_code, 0) << r.output;
}

TEST_F(Cli, ListPolicies) {
  const auto r = run("list policies --names");
  EXPECT_EQ(r.exit_code, 0);
  // The on-device family of seed 002 is listed with the others.
  EXPECT_NE(r.output.find("paged\npointer_shift\nshift_concat\nsliding_window\nsmart_mask\n"),
            std::string::npos)
      << r.output;
}

// What a new user types first: each item comes with its one line.
TEST_F(Cli, ListsAndNoCommandSayWhatEachItemIs) {
  const auto policies = run("list policies");
  EXPECT_EQ(policies.exit_code, 0);
  EXPECT_NE(policies.output.find("position-independent chunk reuse in a second LRU pool"),
            std::string::npos)
      << policies.output;
  const auto devices = run("list devices");
  EXPECT_NE(devices.output.find("Huawei Ascend 910B2, one NPU of an 8-NPU Atlas 800 A2 server"),
            std::string::npos)
      << devices.output;
  const auto kinds = run("list");
  EXPECT_EQ(kinds.exit_code, 0) << kinds.output;
  for (const char* kind : {"devices", "models", "scenarios", "policies", "presets"})
    EXPECT_NE(kinds.output.find(kind), std::string::npos) << kind << "\n" << kinds.output;
  // The connector presets, each with what it is and its source; with
  // --params, each key it sets with its value and that value's source.
  const auto presets = run("list presets");
  EXPECT_EQ(presets.exit_code, 0) << presets.output;
  for (const char* name : {"vllm_offloading", "lmcache", "mooncake_store", "hicache_write_through",
                           "hicache_write_back", "ascend_store"})
    EXPECT_NE(presets.output.find(name), std::string::npos) << name << "\n" << presets.output;
  EXPECT_NE(presets.output.find("Source: LMCache/LMCache"), std::string::npos) << presets.output;
  const auto names = run("list presets --names");
  EXPECT_NE(names.output.find("hicache_write_back\nascend_store\nmooncake_store\nascend_store\n"),
            std::string::npos)
      << names.output;
  const auto params = run("list presets --params");
  EXPECT_NE(params.output.find("lmcache (connector preset): kv_tiers.preset: "), std::string::npos)
      << params.output;
  EXPECT_NE(params.output.find("| `tiers.dram.capacity` | bytes | `5GB` |"), std::string::npos)
      << params.output;
  EXPECT_NE(params.output.find("ascend_store (pool preset): cluster.global_pool.preset: "),
            std::string::npos)
      << params.output;
  EXPECT_NE(params.output.find("| `staging_buffer` | bytes | `1GiB` |"), std::string::npos)
      << params.output;
  const auto none = testing::run_command(std::string(KVSIM_BINARY));
  EXPECT_EQ(none.exit_code, 0) << none.output;
  EXPECT_NE(none.output.find("run variants of a scenario side by side"), std::string::npos)
      << none.output;
}

}  // namespace
}  // namespace kvsim::KVSIM_TEST_FILE_SCOPE
