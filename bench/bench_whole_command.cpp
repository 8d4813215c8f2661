// A user's figure: the whole `kvsim run` process (start-up, trace reading,
// the run, metrics.json, both reports with their charts, the CSVs) against
// the engine's own `sim.wall_s`, on the trace replays users time (the Azure
// and Mooncake conversation traces in ../shared/data/traces, skipped when
// absent). The kvsim binary beside this one runs as a child process into a
// fresh folder per iteration. Counters:
//   process_s        the whole process's wall time, mean per iteration
//   engine_wall_s    sim.wall_s from its metrics.json, mean per iteration
//   process_over_engine  process_s / engine_wall_s (target: <= 1.3)
#include <benchmark/benchmark.h>
#include <fcntl.h>
#include <fmt/format.h>
#include <sys/wait.h>
#include <unistd.h>

#include <chrono>
#include <filesystem>
#include <fstream>
#include <nlohmann/json.hpp>

#include "base/source_paths.hpp"

namespace {
namespace fs = std::filesystem;

// Runs `kvsim run SCENARIO --out OUT --quiet`; the process's wall time in
// seconds, or a negative number when it did not exit 0.
double time_run(const std::string& kvsim, const std::string& scenario, const std::string& out) {
  const auto start = std::chrono::steady_clock::now();
  const pid_t pid = fork();
  if (pid == 0) {
    const int null_fd = open("/dev/null", O_RDWR);
    if (null_fd >= 0) {
      dup2(null_fd, STDOUT_FILENO);
      dup2(null_fd, STDERR_FILENO);
    }
    execl(kvsim.c_str(), "kvsim", "run", scenario.c_str(), "--out", out.c_str(), "--quiet",
          static_cast<char*>(nullptr));
    _exit(127);
  }
  int status = 0;
  if (pid < 0 || waitpid(pid, &status, 0) < 0) return -1;
  const double s = std::chrono::duration<double>(std::chrono::steady_clock::now() - start).count();
  return WIFEXITED(status) && WEXITSTATUS(status) == 0 ? s : -1;
}

void BM_WholeCommand(benchmark::State& state, const char* scenario_name, const char* trace) {
  const std::string data = std::string(KVSIM_SHARED_DATA_DIR) + "/traces/" + trace;
  if (!fs::exists(data)) {
    state.SkipWithError(("shared data absent: " + data).c_str());
    return;
  }
  const std::string kvsim = (fs::read_symlink("/proc/self/exe").parent_path() / "kvsim").string();
  const std::string scenario =
      std::string(KVSIM_CONFIG_DIR) + "/scenarios/" + scenario_name + ".yaml";
  std::string base = (fs::temp_directory_path() / "kvsim-bench-whole-XXXXXX").string();
  if (mkdtemp(base.data()) == nullptr) {
    state.SkipWithError("no temporary folder");
    return;
  }
  double process_s = 0, engine_s = 0;
  int64_t n = 0;
  for (auto _ : state) {
    const std::string out = fmt::format("{}/run{}", base, n);
    const double s = time_run(kvsim, scenario, out);
    if (s < 0) {
      state.SkipWithError("kvsim run failed");
      break;
    }
    std::ifstream metrics(out + "/metrics.json");
    engine_s += nlohmann::json::parse(metrics).at("sim").at("wall_s").get<double>();
    process_s += s;
    ++n;
    state.SetIterationTime(s);
    fs::remove_all(out);
  }
  fs::remove_all(base);
  if (n == 0) return;
  state.counters["process_s"] = process_s / static_cast<double>(n);
  state.counters["engine_wall_s"] = engine_s / static_cast<double>(n);
  state.counters["process_over_engine"] = process_s / engine_s;
}

BENCHMARK_CAPTURE(BM_WholeCommand, azure_conversation, "azure-conversation-910b2",
                  "azure_llm_2023_conv.csv")
    ->UseManualTime()
    ->Unit(benchmark::kMillisecond)
    ->Iterations(5);
BENCHMARK_CAPTURE(BM_WholeCommand, mooncake_conversation_tp8, "mooncake-conversation-910b2-tp8",
                  "mooncake_conversation.jsonl")
    ->UseManualTime()
    ->Unit(benchmark::kMillisecond)
    ->Iterations(5);
BENCHMARK_CAPTURE(BM_WholeCommand, mooncake_conversation_8_replicas,
                  "mooncake-conversation-910b2-8x-replicas", "mooncake_conversation.jsonl")
    ->UseManualTime()
    ->Unit(benchmark::kMillisecond)
    ->Iterations(5);

}  // namespace

BENCHMARK_MAIN();
