// A long on-device dialog: Llama-3.2-3B w4a16 on Snapdragon 8
// Elite, a sliding window over each Genie update mode, speculative decoding
// and a camera model sharing VTCM. Counters:
//   passes_per_wall_s  HTP graph passes simulated per wall-clock second
//   sim_s_per_wall_s   simulated seconds per wall-clock second
#include <benchmark/benchmark.h>
#include <fmt/format.h>

#include "base/source_paths.hpp"
#include "sim/genie/genie_engine.hpp"
#include "sim/scenario/scenario.hpp"

namespace {

const char* const kModes[] = {"shift_concat", "pointer_shift", "smart_mask"};

kvsim::ScenarioSpec scenario(const char* mode, int64_t turns) {
  return kvsim::load_scenario_text(fmt::format(R"(
name: bench-dialog
seed: 1
device: snapdragon-8-elite
model: llama-3.2-3b-instruct-w4a16
kv_cache: {{policy: sliding_window, update_mode: {}, window: 3072, dtype: int8, ctx_size: 4096,
           ar_variants: [1, 32, 128]}}
workload:
  kind: dialog
  turns: {}
  prompt_tokens: {{dist: lognormal, mean: 200, sigma: 0.6, min: 8, max: 2048}}
  reply_tokens: {{dist: lognormal, mean: 150, sigma: 0.5, min: 4, max: 1024}}
  think_time: {{dist: exponential, mean: 10s}}
  speculative: {{draft_tokens: 4, acceptance_rate: 0.7}}
htp:
  vtcm_request: 6MiB
  co_runners:
    - {{name: camera, vtcm_request: 2MiB, period: 33ms, busy: 12ms}}
)",
                                               mode, turns),
                                   "bench.yaml", KVSIM_CONFIG_DIR);
}

void BM_DialogRun(benchmark::State& state) {
  const char* mode = kModes[state.range(0)];
  state.SetLabel(mode);
  const kvsim::ScenarioSpec s = scenario(mode, state.range(1));
  double simulated_s = 0, wall_s = 0;
  int64_t passes = 0;
  for (auto _ : state) {
    kvsim::GenieEngine engine(s, nullptr);
    const kvsim::RunMetrics m = engine.run();
    simulated_s += m.sim.simulated_s;
    wall_s += m.sim.wall_s;
    passes += m.sim.steps;
    benchmark::DoNotOptimize(m);
  }
  state.counters["passes_per_wall_s"] = static_cast<double>(passes) / wall_s;
  state.counters["sim_s_per_wall_s"] = simulated_s / wall_s;
  state.SetItemsProcessed(passes);
}
BENCHMARK(BM_DialogRun)
    ->ArgsProduct({{0, 1, 2}, {200}})
    ->Unit(benchmark::kMillisecond)
    ->Iterations(1);

}  // namespace

BENCHMARK_MAIN();
