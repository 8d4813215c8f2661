// A run's own files when it is interrupted or repeated: --trace's temporary
// file goes with the run on SIGTERM, SIGINT and SIGHUP; gnuplot's temporary
// folder goes on a signal too; report.html is byte-identical run to run
// (no temporary path reaches a chart); a pool smaller than one block writes
// nothing.
#include <fcntl.h>
#include <signal.h>
#include <sys/stat.h>
#include <sys/wait.h>

#include <chrono>
#include <nlohmann/json.hpp>
#include <regex>
#include <thread>

#include "report_test_helpers.hpp"
#include "reports/gnuplot_chart.hpp"

namespace kvsim::KVSIM_TEST_FILE_SCOPE {
namespace {
namespace fs = std::filesystem;
using namespace std::chrono_literals;

// Names under `dir` that a process left behind: .NAME.tmp-PID, .partial.
std::vector<std::string> temporaries(const fs::path& dir) {
  std::vector<std::string> out;
  for (const auto& e : fs::recursive_directory_iterator(dir)) {
    const std::string name = e.path().filename().string();
    if (name.find(".tmp-") != std::string::npos || name.find(".partial") != std::string::npos ||
        name.find(".lock") != std::string::npos)
      out.push_back(name);
  }
  return out;
}

class RunFaults : public testing::TempFolderTest {};

class InterruptedTrace : public RunFaults, public ::testing::WithParamInterface<int> {};

TEST_P(InterruptedTrace, LeavesNoTemporaryTraceFile) {
  const std::string s = write("long.yaml", testing::small_scenario("long", 5000000));
  const pid_t pid = fork();
  ASSERT_GE(pid, 0);
  if (pid == 0) {
    execl(KVSIM_BINARY, "kvsim", "run", s.c_str(), "--quiet", "--out", path("run").c_str(),
          "--trace", path("t.json").c_str(), static_cast<char*>(nullptr));
    _exit(127);
  }
  // The trace's temporary file appears when the run starts.
  const fs::path temp = dir_ / (".t.json.tmp-" + std::to_string(pid));
  const fs::path old_partial = dir_ / "t.json.partial";
  for (int i = 0; i < 1000 && !fs::exists(temp) && !fs::exists(old_partial); ++i)
    std::this_thread::sleep_for(10ms);
  const bool started = fs::exists(temp) || fs::exists(old_partial);
  ASSERT_EQ(::kill(pid, GetParam()), 0);
  int status = 0;
  ASSERT_EQ(::waitpid(pid, &status, 0), pid);
  ASSERT_TRUE(started) << "the run did not start";
  EXPECT_TRUE(WIFSIGNALED(status) && WTERMSIG(status) == GetParam()) << status;
  EXPECT_TRUE(temporaries(dir_).empty()) << temporaries(dir_).front();
  EXPECT_FALSE(fs::exists(path("t.json")));
}

INSTANTIATE_TEST_SUITE_P(Signals, InterruptedTrace, ::testing::Values(SIGTERM, SIGINT, SIGHUP),
                         [](const ::testing::TestParamInfo<int>& p) {
                           return std::string("SIG") + sigabbrev_np(p.param);
                         });

// A gnuplot that never finishes (a stand-in on PATH) holds the report's
// chart folder open while the run is ended: the folder goes with the run.
TEST_F(RunFaults, AHandledSignalRemovesGnuplotsTemporaryFolder) {
  fs::create_directories(path("bin"));
  fs::create_directories(path("tmp"));
  const std::string fake =
      write("bin/gnuplot", "#!/bin/sh\necho $$ > " + path("gnuplot.pid") + "\nexec sleep 30\n");
  fs::permissions(fake, fs::perms::owner_all);
  const std::string s = write("s.yaml", testing::small_scenario("charts", 20));
  const pid_t pid = fork();
  ASSERT_GE(pid, 0);
  if (pid == 0) {
    setenv("PATH", (path("bin") + ":/usr/bin:/bin").c_str(), 1);
    setenv("TMPDIR", path("tmp").c_str(), 1);
    execl(KVSIM_BINARY, "kvsim", "run", s.c_str(), "--quiet", "--out", path("run").c_str(),
          static_cast<char*>(nullptr));
    _exit(127);
  }
  for (int i = 0; i < 1000 && !fs::exists(path("gnuplot.pid")); ++i)
    std::this_thread::sleep_for(10ms);
  std::this_thread::sleep_for(50ms);
  bool chart_folder = false;
  for (const auto& e : fs::directory_iterator(path("tmp")))
    chart_folder = chart_folder || e.path().filename().string().rfind("kvsim-gnuplot-", 0) == 0;
  ASSERT_EQ(::kill(pid, SIGTERM), 0);
  int status = 0;
  ASSERT_EQ(::waitpid(pid, &status, 0), pid);
  // The stand-in is this test's to stop.
  const std::string gnuplot_pid = read(path("gnuplot.pid"));
  if (!gnuplot_pid.empty()) ::kill(static_cast<pid_t>(std::stol(gnuplot_pid)), SIGKILL);
  ASSERT_TRUE(chart_folder) << "the chart folder was not made";
  for (const auto& e : fs::directory_iterator(path("tmp")))
    ADD_FAILURE() << "left in the temporary folder: " << e.path().filename().string();
}

// Two runs of one scenario write the same report.html: charts of spans (an
// on-device dialog's passes, llama.cpp's cells, chunk_lru's numerics run)
// name no temporary file.
TEST_F(RunFaults, ReportHtmlIsTheSameRunToRun) {
  if (!find_gnuplot()) GTEST_SKIP() << "gnuplot not found: no charts to compare";
  for (const char* name : {"htp-llama3.2-3b-elite-smart-mask", "htp-llama-cells-long-dialog",
                           "rag-910b2-chunk-lru-numerics"}) {
    SCOPED_TRACE(name);
    const std::string scenario =
        std::string(KVSIM_SOURCE_DIR) + "/configs/scenarios/" + name + ".yaml";
    for (const char* out : {"a", "b"}) {
      const auto r = kvsim("run " + scenario + " --quiet --no-expect --force --out " + path(out));
      ASSERT_EQ(r.exit_code, 0) << r.output;
    }
    // The host's wall time, which the summary states (as metrics.json's
    // sim.wall_s), is the one figure that may differ.
    const std::regex wall(R"([0-9.]+ s wall)");
    const std::string a = std::regex_replace(read(path("a/report.html")), wall, "W s wall");
    const std::string b = std::regex_replace(read(path("b/report.html")), wall, "W s wall");
    EXPECT_NE(a.find("<svg"), std::string::npos);
    EXPECT_EQ(a.find("kvsim-gnuplot-"), std::string::npos);
    EXPECT_TRUE(a == b) << "report.html differs between two runs";
  }
}

// A global pool of one byte holds no block: nothing is written into it.
TEST_F(RunFaults, APoolSmallerThanOneBlockWritesNothing) {
  const std::string scenario = std::string(KVSIM_SOURCE_DIR) +
                               "/configs/scenarios/mooncake-conversation-910b2-8x-global-pool.yaml";
  const std::string trace =
      std::string(KVSIM_SOURCE_DIR) + "/../shared/data/traces/mooncake_conversation.jsonl";
  if (!fs::exists(trace)) GTEST_SKIP() << "shared data absent: " << trace;
  const auto r = kvsim("run " + scenario + " --quiet --no-expect --out " + path("run") +
                       " --set cluster.global_pool.capacity=1B --set workload.trace.duration_s=60");
  ASSERT_EQ(r.exit_code, 0) << r.output;
  std::ifstream in(path("run/metrics.json"));
  const auto m = nlohmann::json::parse(in);
  EXPECT_EQ(m["cluster"]["global_pool"]["capacity_blocks"], 0);
  EXPECT_GT(m["cluster"]["global_pool"]["puts"].get<int64_t>(), 0);
  EXPECT_EQ(m["kv_tiers"]["global"]["bytes_written"], 0);
  EXPECT_EQ(m["kv_tiers"]["global"]["hit_tokens"], 0);
}

// No request completed: metrics.json says none (null), not 0 ms.
TEST_F(RunFaults, NoCompletedRequestHasNoLatency) {
  const std::string s = write("s.yaml", testing::small_scenario("none", 6));
  const auto r =
      kvsim("run " + s + " --quiet --out " + path("run") + " --set scheduler.max_model_len=32");
  ASSERT_EQ(r.exit_code, 0) << r.output;
  std::ifstream in(path("run/metrics.json"));
  const auto m = nlohmann::json::parse(in);
  EXPECT_EQ(m["requests"]["completed"], 0);
  EXPECT_TRUE(m["latency_ms"]["ttft"]["p99"].is_null()) << m["latency_ms"].dump();
  EXPECT_TRUE(m["latency_ms"]["e2e"]["mean"].is_null());
  EXPECT_NE(read(path("run/report.md")).find("none"), std::string::npos);
}

}  // namespace
}  // namespace kvsim::KVSIM_TEST_FILE_SCOPE
