// CPU cost of one serving step as the batch grows: a saturated decode
// workload at max_num_seqs 16 / 256 / 1,024 (Llama-3.2-1B on Ascend 910B2,
// paged KV with prefix caching). Every request arrives within the first
// simulated millisecond and asks for a short prompt and ~512 output tokens,
// so nearly every step is a full batch of decodes. Counters:
//   ns_per_step          CPU nanoseconds per engine step
//   ns_per_seq_step      the same divided by max_num_seqs: flat if the step's
//                        cost does not grow with the batch
//   mean_batch           scheduled sequences per step (should be ~max_num_seqs)
//   sim_x_real           simulated seconds per CPU second (x real time)
// A decode is advanced in bulk from its first decode to its last two steps
// (SchedulerParams::bulk_decodes): what grows with the batch is a pass over
// 4 bytes a sequence (EventSteps, compared several at a time) plus its
// block fills (a commit) and new blocks, each a look at the policy and no
// Sequence read (about 2 sequences in 16 a step at block_size 16).
// The run also builds the engine (a pool of ~10^5 blocks) and generates and
// retires max(4 x max_num_seqs, 1,024) requests; that cost is included,
// spread over the run's steps (>= 1,024 x 512 / max_num_seqs of them).
//
// BM_StepCostSpeculative runs the same workload with an EAGLE-3 head and K
// drafts (speculative:, acceptance 0.7; K = 0 is the section left out):
// its steps go one by one (no bulk decodes), and are fewer (each emits
// ~1 + E[accepted] tokens a sequence). Counter cpu_ms_per_run compares the
// two runs of the same requests (the bar: speculation within 1.5x). A
// verify step draws every sequence's acceptances in one pass without a
// branch per draft, counts them by length (the per-position counts are
// their tails), and commits only the sequences whose accepted tokens reach
// their commit horizon, as decodes do.
#include <benchmark/benchmark.h>
#include <fmt/format.h>

#include <algorithm>
#include <ctime>
#include <string>

#include "base/source_paths.hpp"
#include "sim/scenario/scenario.hpp"
#include "sim/serve/engine.hpp"

namespace {

// CPU time of this thread: the machine is shared, so wall time would count
// other processes' time slices too.
double thread_cpu_s() {
  timespec t{};
  clock_gettime(CLOCK_THREAD_CPUTIME_ID, &t);
  return static_cast<double>(t.tv_sec) + 1e-9 * static_cast<double>(t.tv_nsec);
}

kvsim::ScenarioSpec scenario(int64_t max_num_seqs, int64_t drafts = 0) {
  return kvsim::load_scenario_text(
      fmt::format(R"(
name: bench-step-cost
seed: 1
device: ascend-910b2
model: llama-3.2-1b
kv_cache: {{policy: paged, block_size: 16, prefix_caching: true}}
scheduler: {{max_num_seqs: {0}, max_batched_tokens: 65536}}
workload:
  kind: synthetic
  requests: {1}
  arrival: {{process: poisson, rate_per_s: 10000000}}
  input_tokens: {{dist: uniform, min: 32, max: 96}}
  output_tokens: {{dist: uniform, min: 480, max: 544}}
{2}
)",
                  max_num_seqs, std::max<int64_t>(4 * max_num_seqs, 1024),
                  drafts == 0
                      ? std::string()
                      : fmt::format("speculative: {{method: eagle3, num_speculative_tokens: "
                                    "{}, acceptance: {{rate: 0.7}}}}",
                                    drafts)),
      "bench.yaml", KVSIM_CONFIG_DIR);
}

void BM_StepCost(benchmark::State& state) {
  const int64_t max_num_seqs = state.range(0);
  const kvsim::ScenarioSpec s = scenario(max_num_seqs);
  double cpu_s = 0;
  int64_t steps = 0;
  double tokens = 0;
  double simulated_s = 0;
  for (auto _ : state) {
    const double start = thread_cpu_s();
    kvsim::ServingEngine engine(s, nullptr);
    const kvsim::RunMetrics m = engine.run();
    cpu_s += thread_cpu_s() - start;
    steps += m.sim.steps;
    simulated_s += m.sim.simulated_s;
    tokens += m.throughput.output_tokens_per_s * m.sim.simulated_s;
    benchmark::DoNotOptimize(m);
  }
  const double ns_per_step = cpu_s * 1e9 / static_cast<double>(steps);
  state.counters["ns_per_step"] = ns_per_step;
  state.counters["ns_per_seq_step"] = ns_per_step / static_cast<double>(max_num_seqs);
  state.counters["mean_batch"] = tokens / static_cast<double>(steps);
  state.counters["sim_x_real"] = simulated_s / cpu_s;
  state.SetItemsProcessed(steps);
}
BENCHMARK(BM_StepCost)->Arg(16)->Arg(256)->Arg(1024)->Unit(benchmark::kMillisecond);

void BM_StepCostSpeculative(benchmark::State& state) {
  const int64_t max_num_seqs = state.range(0);
  const kvsim::ScenarioSpec s = scenario(max_num_seqs, state.range(1));
  double cpu_s = 0;
  int64_t steps = 0, runs = 0;
  for (auto _ : state) {
    const double start = thread_cpu_s();
    kvsim::ServingEngine engine(s, nullptr);
    const kvsim::RunMetrics m = engine.run();
    cpu_s += thread_cpu_s() - start;
    steps += m.sim.steps;
    ++runs;
    benchmark::DoNotOptimize(m);
  }
  state.counters["cpu_ms_per_run"] = cpu_s * 1e3 / static_cast<double>(runs);
  state.counters["ns_per_step"] = cpu_s * 1e9 / static_cast<double>(steps);
  state.counters["steps_per_run"] = static_cast<double>(steps) / static_cast<double>(runs);
  state.SetItemsProcessed(steps);
}
BENCHMARK(BM_StepCostSpeculative)
    ->Args({256, 0})
    ->Args({256, 3})
    ->Args({1024, 0})
    ->Args({1024, 3})
    ->Unit(benchmark::kMillisecond);

}  // namespace

BENCHMARK_MAIN();
