// `kvsim hitcurve` on the Mooncake synthetic trace (../shared/data/traces,
// skipped when absent) with 512-token blocks: one cache-only replay per
// capacity, and the whole 1e4..1e8-token curve of 9 points, which should
// finish in under a minute. Counters:
//   prompt_tokens_per_s  prompt tokens replayed (generated, hashed, looked up) per second
//   hit_rate             at that capacity (tokens served from cache / prompt tokens)
#include <benchmark/benchmark.h>

#include <filesystem>

#include "base/source_paths.hpp"
#include "cli/studies/hitcurve.hpp"

namespace {

std::string trace_path() {
  return std::string(KVSIM_SHARED_DATA_DIR) + "/traces/mooncake_synthetic.jsonl";
}

kvsim::ScenarioSpec mooncake_scenario() {
  return kvsim::load_scenario_text(
      "name: mooncake-synthetic\nseed: 42\ndevice: ascend-910b2\nmodel: llama-3.2-3b\n"
      "parallel: {tensor: 8}\nkv_cache: {policy: paged, block_size: 512}\n"
      "workload:\n  trace: {format: mooncake, path: " +
          trace_path() + "}\n",
      "bench_hitcurve.yaml", KVSIM_CONFIG_DIR);
}

void run_curve(benchmark::State& state, const std::vector<int64_t>& capacities) {
  if (!std::filesystem::exists(trace_path())) {
    state.SkipWithError(("shared data absent: " + trace_path()).c_str());
    return;
  }
  const kvsim::ScenarioSpec spec = mooncake_scenario();
  kvsim::HitCurve curve;
  for (auto _ : state) {
    curve = kvsim::compute_hit_curve(spec, capacities);
    benchmark::DoNotOptimize(curve);
  }
  int64_t tokens = 0;
  for (const auto& p : curve.points) tokens += p.replay.prompt_tokens;
  state.counters["prompt_tokens_per_s"] =
      benchmark::Counter(static_cast<double>(tokens) * static_cast<double>(state.iterations()),
                         benchmark::Counter::kIsRate);
  state.counters["hit_rate"] = curve.points.back().replay.hit_rate();
}

void BM_HitCurvePoint(benchmark::State& state) {
  run_curve(state, {state.range(0)});
}
BENCHMARK(BM_HitCurvePoint)
    ->Arg(10'000)
    ->Arg(1'000'000)
    ->Arg(100'000'000)
    ->Unit(benchmark::kMillisecond);

void BM_HitCurveMooncake1e4To1e8(benchmark::State& state) {
  run_curve(state, {10'000, 30'000, 100'000, 300'000, 1'000'000, 3'000'000, 10'000'000, 30'000'000,
                    100'000'000});
}
BENCHMARK(BM_HitCurveMooncake1e4To1e8)->Unit(benchmark::kMillisecond)->Iterations(1);

}  // namespace

BENCHMARK_MAIN();
