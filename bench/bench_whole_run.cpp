// A whole serving run: 100,000 synthetic requests on Llama-3-8B / Ascend
// 910B2, paged KV cache with prefix caching (target: at least
// 10,000 simulated seconds per wall second, memory flat in the number of
// finished requests). Counters:
//   sim_s_per_wall_s  simulated seconds per wall-clock second
//   sim_x_real        simulated seconds per CPU second of this thread (the
//                     machine is shared: wall time counts other processes)
//   pooled_sequences  Sequence objects ever allocated (bounded by concurrency)
//   max_rss_mib       the process's peak resident memory after the run
#include <benchmark/benchmark.h>
#include <fmt/format.h>
#include <sys/resource.h>

#include <ctime>

#include "base/source_paths.hpp"
#include "sim/scenario/scenario.hpp"
#include "sim/serve/engine.hpp"

namespace {

kvsim::ScenarioSpec scenario(int64_t requests) {
  return kvsim::load_scenario_text(fmt::format(R"(
name: bench-whole-run
seed: 1
device: ascend-910b2
model: llama-3-8b
kv_cache: {{policy: paged, block_size: 128, prefix_caching: true}}
scheduler: {{max_num_seqs: 256, max_batched_tokens: 8192}}
workload:
  kind: synthetic
  requests: {}
  arrival: {{process: poisson, rate_per_s: 4}}
  input_tokens: {{dist: lognormal, mean: 512, sigma: 0.6, min: 16, max: 4096}}
  output_tokens: {{dist: lognormal, mean: 128, sigma: 0.6, min: 4, max: 1024}}
  shared_prefix: {{groups: 16, tokens: 256, popularity: zipf, zipf_s: 1.0}}
)",
                                               requests),
                                   "bench.yaml", KVSIM_CONFIG_DIR);
}

double thread_cpu_s() {
  timespec t{};
  clock_gettime(CLOCK_THREAD_CPUTIME_ID, &t);
  return static_cast<double>(t.tv_sec) + 1e-9 * static_cast<double>(t.tv_nsec);
}

double max_rss_mib() {
  rusage u{};
  getrusage(RUSAGE_SELF, &u);
  return static_cast<double>(u.ru_maxrss) / 1024.0;
}

void BM_WholeRun(benchmark::State& state) {
  const kvsim::ScenarioSpec s = scenario(state.range(0));
  double simulated_s = 0, wall_s = 0, cpu_s = 0;
  size_t pooled = 0;
  int64_t completed = 0;
  for (auto _ : state) {
    const double start = thread_cpu_s();
    kvsim::ServingEngine engine(s, nullptr);
    const kvsim::RunMetrics m = engine.run();
    cpu_s += thread_cpu_s() - start;
    simulated_s += m.sim.simulated_s;
    wall_s += m.sim.wall_s;
    pooled = engine.pooled_sequences();
    completed = m.requests.completed;
    benchmark::DoNotOptimize(m);
  }
  state.counters["sim_s_per_wall_s"] = simulated_s / wall_s;
  state.counters["sim_x_real"] = simulated_s / cpu_s;
  state.counters["simulated_s"] = simulated_s / static_cast<double>(state.iterations());
  state.counters["requests_completed"] = static_cast<double>(completed);
  state.counters["pooled_sequences"] = static_cast<double>(pooled);
  state.counters["max_rss_mib"] = max_rss_mib();
  state.SetItemsProcessed(state.iterations() * state.range(0));
}
// 10,000 first, then 100,000: if max_rss_mib does not rise from the first to
// the second, memory does not grow with the number of finished requests.
BENCHMARK(BM_WholeRun)->Arg(10'000)->Arg(100'000)->Unit(benchmark::kMillisecond)->Iterations(1);

}  // namespace

BENCHMARK_MAIN();
