// A 64-variant sweep on one worker process and on two: the speedup of
// `kvsim sweep --jobs 2` (target >= 1.8x on two idle cores). Each variant is
// a child `kvsim run` (the kvsim binary built beside this benchmark).
#include <benchmark/benchmark.h>

#include <filesystem>
#include <fstream>

#include "cli/studies/sweep.hpp"
#include "sim/scenario/scenario.hpp"

namespace {
namespace fs = std::filesystem;

// Qwen3-32B tp4 on 910B2, 40 requests per variant: 2 x 4 x 2 x 4 = 64.
kvsim::SweepSpec sweep_spec(const fs::path& dir) {
  const std::string configs = kvsim::find_configs_dir("");
  const fs::path file = dir / "bench.yaml";
  std::ofstream(file) << "base: " << configs << "/scenarios/qwen3-32b-tp4.yaml\n"
                      << "set: {workload.requests: 40}\n"
                         "grid:\n"
                         "  kv_cache.dtype: [fp16, int8]\n"
                         "  kv_cache.block_size: [16, 32, 64, 128]\n"
                         "  kv_cache.prefix_caching: [true, false]\n"
                         "  workload.arrival.rate_per_s: [1, 2, 4, 8]\n";
  return kvsim::load_sweep(file.string(), false);
}

void BM_Sweep64(benchmark::State& state) {
  const fs::path dir =
      fs::temp_directory_path() / ("kvsim-bench-sweep-" + std::to_string(getpid()));
  fs::create_directories(dir);
  const kvsim::SweepSpec spec = sweep_spec(dir);
  kvsim::SweepOptions options;
  options.jobs = static_cast<int>(state.range(0));
  options.out = (dir / "out").string();
  options.kvsim_binary = (fs::read_symlink("/proc/self/exe").parent_path() / "kvsim").string();
  for (auto _ : state) {
    const auto r = kvsim::run_sweep(spec, options, kvsim::MpiWorld{});
    benchmark::DoNotOptimize(r.outcomes.size());
  }
  state.counters["variants_per_s"] = benchmark::Counter(
      64.0 * static_cast<double>(state.iterations()), benchmark::Counter::kIsRate);
  fs::remove_all(dir);
}
BENCHMARK(BM_Sweep64)->Arg(1)->Arg(2)->Unit(benchmark::kMillisecond)->Iterations(3)->UseRealTime();

}  // namespace

BENCHMARK_MAIN();
