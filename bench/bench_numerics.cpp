// The numerics checker's cost on the default scenario (configs/scenarios/
// default.yaml): numerics off, `sampled` at its default sample_every, and
// `full`. SPEC 8's budget for `sampled` is at most 2x a run without checks.
// Counters:
//   engine_s  the engine's own wall time for the run (sim.wall_s: no
//             scenario loading, no reports)
//   checks    numerics checks the run made
// Run with --benchmark_repetitions=3 and quote the medians with `uptime`.
// Measured on the 2-core build machine (Release, medians of 5, load 1.4-2.3):
// off 22.7 ms of engine time, sampled 44.0-45.1 ms (1.93-1.98x), down from
// 65.3-65.9 ms (2.86-2.91x) before the fold read rows in place, the decode
// check took a vectorised exp, RoPE and the rows were made per run of
// tokens, the shadow pool took huge pages and rows were encoded once.
// Later (2 cores, medians of 3 rounds of 5, load 1.3-1.8): off 19.4 ms,
// sampled 36.8 ms (1.86-1.90x), from 39.5 ms (1.99x) before a confirmed
// block gave its shadow slot back (peak RSS of the sampled default run 26.5
// -> 20.5 MB), content addresses took a one-shot hash, and a followed
// sequence's rows were made, stored and folded a layer and 32 tokens at a
// time. What is left is per followed token (84K in this run, each made,
// stored, folded into the reference and read by the checked kernel once),
// each pass near its arithmetic bound.
// Then (2 cores shared with other builds, load 2.2-2.4, medians of 4
// rounds of 5): off 13.9 ms, sampled 28.2 -> 24.9 ms (2.01x -> 1.80x; the
// sampled run's extra time 14.2 -> 11.1 ms) once the per-token passes took
// AVX-512 where the machine has it, with the same per-lane operations so
// the same bits: rows made two heads per vector and keys rotated from a
// half-size RoPE table, the fp16 round trip, both exps, the decode kernel's
// value pass, and the reference's scores and values a KV head's four
// query heads at a time. On Zen 4 the 512-bit passes are now near its
// 512-bit throughput, not its instruction rate. (Valgrind hides AVX-512:
// callgrind counts the AVX2 paths.)
// On a CPU without AVX-512 (here with KVSIM_NO_AVX512=1: the AVX2 paths;
// idle 2 cores, medians of 3-5 alternating rounds, three sessions): sampled
// 25.2 -> 24.0, 23.4 -> 22.4 and 24.7 -> 23.6 ms (off 12.4 ms; about 2.0x ->
// 1.92x) once the checked decode kernel had its own version for the
// checker's shape (kernels/attention_decode_group4.cpp: a KV head's queries,
// block max and outputs in registers, the softmax glue one pass per row),
// with the same operations in the same order, so the same bits; AVX-512
// paths no slower (22.1 -> 21.8, 20.8 -> 20.5 ms). Callgrind (AVX2): the
// decode kernel's instructions 166 -> 102 M for the 3 iterations.
// With it, a followed sequence's rows on the AVX2 paths made, rotated,
// encoded to fp16 and decoded back in one kernel (synthetic_kv_rows_stored)
// instead of three passes over scratch rows: 4 alternating rounds, load 1.5,
// AVX2 paths sampled/off 1.95-2.00x -> 1.77-1.83x (sampled 23.4-25.4 ->
// 21.8-23.4 ms, off 12.0-12.8 ms); AVX-512 paths 1.74-1.78x -> 1.72-1.77x.
// `full` follows every sequence every step and takes far longer: leave it
// out with --benchmark_filter='off|sampled'.
#include <benchmark/benchmark.h>

#include <string>
#include <vector>

#include "base/source_paths.hpp"
#include "sim/numerics/numerics_observer.hpp"
#include "sim/scenario/scenario.hpp"
#include "sim/serve/engine.hpp"

namespace {

kvsim::ScenarioSpec default_scenario(const std::vector<std::string>& overrides) {
  return kvsim::load_scenario(std::string(KVSIM_CONFIG_DIR) + "/scenarios/default.yaml", overrides);
}

void BM_DefaultScenarioNumerics(benchmark::State& state,
                                const std::vector<std::string>& overrides) {
  const kvsim::ScenarioSpec s = default_scenario(overrides);
  double engine_s = 0;
  int64_t checks = 0;
  for (auto _ : state) {
    kvsim::ServingEngine engine(s, nullptr, kvsim::make_numerics_observer);
    const kvsim::RunMetrics m = engine.run();
    engine_s += m.sim.wall_s;
    checks = m.numerics.checks;
    benchmark::DoNotOptimize(m);
  }
  state.counters["engine_s"] = engine_s / static_cast<double>(state.iterations());
  state.counters["checks"] = static_cast<double>(checks);
}

using Overrides = std::vector<std::string>;
BENCHMARK_CAPTURE(BM_DefaultScenarioNumerics, off, Overrides{"numerics.mode=off"})
    ->Unit(benchmark::kMillisecond)
    ->Iterations(3);
BENCHMARK_CAPTURE(BM_DefaultScenarioNumerics, sampled, Overrides{"numerics.mode=sampled"})
    ->Unit(benchmark::kMillisecond)
    ->Iterations(3);
// Sampled with no sequence followed: what recording the unfollowed
// requests' writes costs by itself.
BENCHMARK_CAPTURE(BM_DefaultScenarioNumerics, sampled_none,
                  Overrides{"numerics.mode=sampled", "numerics.sample_every=1000000"})
    ->Unit(benchmark::kMillisecond)
    ->Iterations(3);
BENCHMARK_CAPTURE(BM_DefaultScenarioNumerics, full, Overrides{"numerics.mode=full"})
    ->Unit(benchmark::kMillisecond)
    ->Iterations(1);

}  // namespace

BENCHMARK_MAIN();
