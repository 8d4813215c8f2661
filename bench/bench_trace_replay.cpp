// Trace replay stays flat in memory: the Mooncake conversation trace and the
// Azure conversation trace (../shared/data/traces, skipped when absent) are
// replayed `loop` times back to back (each pass one trace span later, new
// content), at 1x and at many x. Benchmarks run in registration order in one
// process, so peak RSS after the Nx run equal to the one after the 1x run
// means nothing grew with the requests replayed. Counters:
//   requests_per_s  requests read (and given their token content) per second
//   requests        requests replayed per iteration
//   max_rss_mib     the process's peak resident memory so far
#include <benchmark/benchmark.h>
#include <fmt/format.h>
#include <sys/resource.h>

#include <ctime>
#include <filesystem>

#include "base/source_paths.hpp"
#include "sim/scenario/scenario.hpp"
#include "sim/serve/engine.hpp"
#include "workloads/trace_file_reader.hpp"
#include "workloads/workload.hpp"

namespace {

std::string trace_path(const char* name) {
  return std::string(KVSIM_SHARED_DATA_DIR) + "/traces/" + name;
}

double max_rss_mib() {
  rusage u{};
  getrusage(RUSAGE_SELF, &u);
  return static_cast<double>(u.ru_maxrss) / 1024.0;
}

kvsim::TraceWorkloadSpec trace_spec(const char* format, const char* file, int64_t loop) {
  kvsim::TraceWorkloadSpec spec;
  spec.format = format;
  spec.path = trace_path(file);
  spec.key_path = "workload.trace";
  spec.loop = loop;
  return spec;
}

// Records parsed per second (no token content): the readers alone.
void BM_TraceRead(benchmark::State& state, const char* format, const char* file) {
  if (!std::filesystem::exists(trace_path(file))) {
    state.SkipWithError(("shared data absent: " + trace_path(file)).c_str());
    return;
  }
  const kvsim::TraceWorkloadSpec spec = trace_spec(format, file, state.range(0));
  int64_t records = 0;
  for (auto _ : state) {
    kvsim::TraceFileReader reader(spec);
    kvsim::ReplayedRecord r;
    records = 0;
    while (reader.next(r)) ++records;
    benchmark::DoNotOptimize(r);
  }
  state.counters["requests_per_s"] =
      benchmark::Counter(static_cast<double>(records) * static_cast<double>(state.iterations()),
                         benchmark::Counter::kIsRate);
  state.counters["requests"] = static_cast<double>(records);
  state.counters["max_rss_mib"] = max_rss_mib();
}

// The request stream the engine pulls: records plus their prompt and output
// token ids (Mooncake prompts built from the hash ids).
void BM_TraceSource(benchmark::State& state, const char* format, const char* file) {
  if (!std::filesystem::exists(trace_path(file))) {
    state.SkipWithError(("shared data absent: " + trace_path(file)).c_str());
    return;
  }
  const kvsim::WorkloadSpec spec{"trace", trace_spec(format, file, state.range(0)), std::nullopt};
  int64_t requests = 0;
  for (auto _ : state) {
    auto source = kvsim::make_request_source(spec, 42, 128256);
    requests = 0;
    while (source->next_arrival()) {
      const kvsim::Request q = source->take();
      benchmark::DoNotOptimize(q.prompt.data());
      ++requests;
    }
  }
  state.counters["requests_per_s"] =
      benchmark::Counter(static_cast<double>(requests) * static_cast<double>(state.iterations()),
                         benchmark::Counter::kIsRate);
  state.counters["requests"] = static_cast<double>(requests);
  state.counters["max_rss_mib"] = max_rss_mib();
}

// A whole serving run of the shipped Azure scenario with the trace looped.
void BM_EngineReplayAzure(benchmark::State& state) {
  const std::string scenario =
      std::string(KVSIM_CONFIG_DIR) + "/scenarios/azure-conversation-910b2.yaml";
  if (!std::filesystem::exists(trace_path("azure_llm_2023_conv.csv"))) {
    state.SkipWithError("shared data absent");
    return;
  }
  const kvsim::ScenarioSpec spec =
      kvsim::load_scenario(scenario, {fmt::format("workload.trace.loop={}", state.range(0))});
  int64_t completed = 0;
  for (auto _ : state) {
    kvsim::ServingEngine engine(spec, nullptr);
    const kvsim::RunMetrics m = engine.run();
    completed = m.requests.completed;
    benchmark::DoNotOptimize(m);
  }
  state.counters["requests_per_s"] =
      benchmark::Counter(static_cast<double>(completed) * static_cast<double>(state.iterations()),
                         benchmark::Counter::kIsRate);
  state.counters["requests"] = static_cast<double>(completed);
  state.counters["max_rss_mib"] = max_rss_mib();
}

// The shipped Mooncake replay (the whole hour, TP8), engine only (no
// reports). sim_x_real: simulated seconds per CPU second of this thread
// (the machine is shared: wall time would count other processes).
void BM_EngineReplayMooncake(benchmark::State& state) {
  const std::string scenario =
      std::string(KVSIM_CONFIG_DIR) + "/scenarios/mooncake-conversation-910b2-tp8.yaml";
  if (!std::filesystem::exists(trace_path("mooncake_conversation.jsonl"))) {
    state.SkipWithError("shared data absent");
    return;
  }
  const kvsim::ScenarioSpec spec = kvsim::load_scenario(scenario, {});
  double simulated_s = 0, cpu_s = 0;
  for (auto _ : state) {
    timespec t0{}, t1{};
    clock_gettime(CLOCK_THREAD_CPUTIME_ID, &t0);
    kvsim::ServingEngine engine(spec, nullptr);
    const kvsim::RunMetrics m = engine.run();
    clock_gettime(CLOCK_THREAD_CPUTIME_ID, &t1);
    cpu_s += static_cast<double>(t1.tv_sec - t0.tv_sec) +
             1e-9 * static_cast<double>(t1.tv_nsec - t0.tv_nsec);
    simulated_s += m.sim.simulated_s;
    benchmark::DoNotOptimize(m);
  }
  state.counters["sim_x_real"] = simulated_s / cpu_s;
  state.counters["max_rss_mib"] = max_rss_mib();
}

BENCHMARK_CAPTURE(BM_TraceRead, mooncake, "mooncake", "mooncake_conversation.jsonl")
    ->Arg(1)
    ->Arg(20)
    ->Unit(benchmark::kMillisecond);
BENCHMARK_CAPTURE(BM_TraceRead, azure, "azure", "azure_llm_2023_conv.csv")
    ->Arg(1)
    ->Arg(20)
    ->Unit(benchmark::kMillisecond);
BENCHMARK_CAPTURE(BM_TraceSource, mooncake, "mooncake", "mooncake_conversation.jsonl")
    ->Arg(1)
    ->Arg(10)
    ->Unit(benchmark::kMillisecond);
BENCHMARK(BM_EngineReplayAzure)->Arg(1)->Arg(8)->Unit(benchmark::kMillisecond)->Iterations(1);
BENCHMARK(BM_EngineReplayMooncake)->Unit(benchmark::kMillisecond)->Iterations(3);

}  // namespace

BENCHMARK_MAIN();
