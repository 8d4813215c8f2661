// A cluster of many instances on one clock: the Mooncake conversation trace
// (../shared/data/traces, skipped when absent) replayed on 64 replicas of
// Llama-3.2-3B (one 910B2 each) behind a prefix-aware router, the trace
// looped 1 and 2 times back to back (each pass one trace span later, new
// content). Benchmarks run in registration order in one process, so a peak
// RSS after the 2-pass run equal to the one after the 1-pass run means
// memory did not grow with the trace's length. The global_pool runs add
// mooncake-conversation-910b2-8x-global-pool.yaml's tiers (a DRAM tier per
// replica, one pool all 64 share): their metadata is bounded by the tiers'
// capacities, not by the trace. The with_rows runs stream what `kvsim run`
// streams while a cluster runs (timeline.csv's row per instance and for the
// cluster at every interval, requests.csv, the charts' per-instance series)
// to files in a temporary folder, so the cost of watching each instance is
// in the figure. The agentic runs replay agentic-910b2-8x-replicas.yaml's
// generated agent sessions on 64 replicas (no shared data needed). Counters:
//   realtime_x   simulated seconds per wall second (>= 1000 is the target)
//   requests     requests served per iteration
//   steps        engine steps over all instances per iteration
//   max_rss_mib  the process's peak resident memory so far
#include <benchmark/benchmark.h>
#include <fmt/format.h>
#include <sys/resource.h>
#include <unistd.h>

#include <chrono>
#include <filesystem>

#include "base/source_paths.hpp"
#include "reports/csv_sink.hpp"
#include "reports/run_series.hpp"
#include "sim/scenario/run_scenario.hpp"
#include "sim/scenario/scenario.hpp"

namespace {

double max_rss_mib() {
  rusage u{};
  getrusage(RUSAGE_SELF, &u);
  return static_cast<double>(u.ru_maxrss) / 1024.0;
}

void BM_ClusterMooncake(benchmark::State& state, const char* router, const char* file,
                        bool with_rows = false, const char* index = nullptr) {
  const std::string trace =
      std::string(KVSIM_SHARED_DATA_DIR) + "/traces/mooncake_conversation.jsonl";
  if (!std::filesystem::exists(trace)) {
    state.SkipWithError(("shared data absent: " + trace).c_str());
    return;
  }
  const std::string scenario = std::string(KVSIM_CONFIG_DIR) + "/scenarios/" + file + ".yaml";
  std::vector<std::string> sets = {fmt::format("cluster.groups.replica.count={}", state.range(0)),
                                   fmt::format("cluster.router.policy={}", router),
                                   fmt::format("workload.trace.loop={}", state.range(1))};
  // An index other than the exact one: `kind` then its keys ("events,10ms").
  if (index != nullptr) {
    const std::string spec_text = index;
    const auto comma = spec_text.find(',');
    sets.push_back("cluster.router.index.kind=" + spec_text.substr(0, comma));
    if (comma != std::string::npos)
      sets.push_back("cluster.router.index.lag=" + spec_text.substr(comma + 1));
  }
  const kvsim::ScenarioSpec spec = kvsim::load_scenario(scenario, sets);
  double simulated = 0, wall = 0;
  int64_t requests = 0, steps = 0;
  for (auto _ : state) {
    const std::filesystem::path dir =
        std::filesystem::temp_directory_path() / fmt::format("kvsim-bench-cluster-{}", ::getpid());
    std::filesystem::create_directories(dir);
    const auto t0 = std::chrono::steady_clock::now();
    kvsim::RunMetrics m;
    if (with_rows) {
      kvsim::CsvRunSink csv((dir / "requests.csv").string(), (dir / "timeline.csv").string());
      kvsim::RunSeries series;
      kvsim::FanOutRunSink sink({&csv, &series});
      m = kvsim::run_scenario(spec, &sink).metrics;
      csv.close();
    } else {
      m = kvsim::run_scenario(spec, nullptr).metrics;
    }
    wall += std::chrono::duration<double>(std::chrono::steady_clock::now() - t0).count();
    std::filesystem::remove_all(dir);
    simulated += m.sim.simulated_s;
    requests = m.requests.completed;
    steps = m.sim.steps;
  }
  state.counters["realtime_x"] = wall > 0 ? simulated / wall : 0;
  state.counters["requests"] = static_cast<double>(requests);
  state.counters["steps"] = static_cast<double>(steps);
  state.counters["max_rss_mib"] = max_rss_mib();
}

// The agentic workload of agentic-910b2-8x-replicas.yaml (generated: no
// shared data) on 64 replicas, the session arrival rate scaled with the
// replicas (8x) so each replica sees the load it sees in the scenario. The
// sets after the router pick its index ("kind" and its keys).
void BM_ClusterAgentic(benchmark::State& state, const char* router, const char* index_kind,
                       const char* lag) {
  const std::string scenario =
      std::string(KVSIM_CONFIG_DIR) + "/scenarios/agentic-910b2-8x-replicas.yaml";
  std::vector<std::string> sets = {fmt::format("cluster.groups.replica.count={}", state.range(0)),
                                   fmt::format("cluster.router.policy={}", router),
                                   "workload.arrival.rate_per_s=48",
                                   fmt::format("workload.sessions={}", state.range(1))};
  if (index_kind != nullptr)
    sets.push_back(fmt::format("cluster.router.index.kind={}", index_kind));
  if (lag != nullptr) sets.push_back(fmt::format("cluster.router.index.lag={}", lag));
  const kvsim::ScenarioSpec spec = kvsim::load_scenario(scenario, sets);
  double simulated = 0, wall = 0;
  int64_t requests = 0;
  for (auto _ : state) {
    const auto t0 = std::chrono::steady_clock::now();
    const kvsim::RunMetrics m = kvsim::run_scenario(spec, nullptr).metrics;
    wall += std::chrono::duration<double>(std::chrono::steady_clock::now() - t0).count();
    simulated += m.sim.simulated_s;
    requests = m.requests.completed;
  }
  state.counters["realtime_x"] = wall > 0 ? simulated / wall : 0;
  state.counters["requests"] = static_cast<double>(requests);
  state.counters["max_rss_mib"] = max_rss_mib();
}

constexpr const char* kReplicas = "mooncake-conversation-910b2-8x-replicas";
constexpr const char* kGlobalPool = "mooncake-conversation-910b2-8x-global-pool";

BENCHMARK_CAPTURE(BM_ClusterMooncake, prefix_aware, "prefix_aware", kReplicas)
    ->Args({64, 1})
    ->Args({64, 2})
    ->Unit(benchmark::kSecond)
    ->Iterations(1);
BENCHMARK_CAPTURE(BM_ClusterMooncake, prefix_aware_with_rows, "prefix_aware", kReplicas, true)
    ->Args({64, 1})
    ->Unit(benchmark::kSecond)
    ->Iterations(1);
// Dynamo's cost over a KV-event index 10 ms behind: every block stored or
// evicted on any of the 64 instances passes through the router's index.
BENCHMARK_CAPTURE(BM_ClusterMooncake, kv_cost_events, "kv_cost", kReplicas, false, "events,10ms")
    ->Args({64, 1})
    ->Unit(benchmark::kSecond)
    ->Iterations(1);
BENCHMARK_CAPTURE(BM_ClusterMooncake, kv_cost_approximate, "kv_cost", kReplicas, false,
                  "approximate")
    ->Args({64, 1})
    ->Unit(benchmark::kSecond)
    ->Iterations(1);
BENCHMARK_CAPTURE(BM_ClusterMooncake, round_robin, "round_robin", kReplicas)
    ->Args({64, 1})
    ->Unit(benchmark::kSecond)
    ->Iterations(1);
BENCHMARK_CAPTURE(BM_ClusterMooncake, prefix_aware_global_pool, "prefix_aware", kGlobalPool)
    ->Args({64, 1})
    ->Args({64, 2})
    ->Unit(benchmark::kSecond)
    ->Iterations(1);

BENCHMARK_CAPTURE(BM_ClusterAgentic, session_affinity, "session_affinity", nullptr, nullptr)
    ->Args({64, 4800})
    ->Unit(benchmark::kSecond)
    ->Iterations(1);
BENCHMARK_CAPTURE(BM_ClusterAgentic, kv_cost_events, "kv_cost", "events", "50ms")
    ->Args({64, 4800})
    ->Unit(benchmark::kSecond)
    ->Iterations(1);
BENCHMARK_CAPTURE(BM_ClusterAgentic, prefix_aware, "prefix_aware", nullptr, nullptr)
    ->Args({64, 4800})
    ->Unit(benchmark::kSecond)
    ->Iterations(1);

}  // namespace

BENCHMARK_MAIN();
