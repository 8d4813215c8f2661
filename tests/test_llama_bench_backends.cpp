// kind: llama_bench off the NPU: llama-bench's tests on the serving
// engine's llama_cells with one slot, through the backend the device
// family offers (CANN on an Ascend, the CPU backend on a server CPU), as
// llama-bench runs on every ggml backend. Checked: the passes each run
// makes (a prompt in ceil(N / n_ubatch) ubatches, a generation of N tokens
// in N one-token decodes), the cache cleared before each repetition and
// the depth kept for the timed run, the decode rate under the weights'
// read bound, and depth slowing generation.
#include <gtest/gtest.h>

#include <string>
#include <vector>

#include "scenario_helpers.hpp"
#include "sim/cache/llama_backend.hpp"
#include "sim/core/llama_bench_metrics.hpp"
#include "sim/serve/engine.hpp"
#include "tests/support/metric_parts.hpp"

namespace kvsim::KVSIM_TEST_FILE_SCOPE {
namespace {

std::string bench_on(const std::string& device, const std::string& depth) {
  return "name: bench-backends\nseed: 3\ndevice: " + device +
         "\nmodel: llama-3.2-1b\n"
         "kv_cache: {policy: llama_cells, behaviour: current, dtype: fp16, ctx_size: 2048, "
         "n_parallel: 1, n_batch: 512, n_ubatch: 512}\n"
         "scheduler: {max_num_seqs: 1, max_batched_tokens: 512}\n"
         "workload:\n  kind: llama_bench\n  tests: [\"pp 128\", \"tg 32\"]\n  depth: " +
         depth + "\n  repetitions: 3\n";
}

struct Bench {
  RunMetrics metrics;
  int64_t passes = 0;
  double tokens = 0;
};

Bench run_bench(const std::string& yaml) {
  const ScenarioSpec s = testing::scenario_from_text(yaml);
  Bench b;
  ServingEngine engine(s, nullptr);
  engine.set_step_recorder([&b](const StepWork& w) {
    ++b.passes;
    if (w.totals_given) {
      b.tokens += w.totals.tokens;
    } else {
      for (const SeqWork& q : w.seqs) b.tokens += static_cast<double>(q.query_tokens);
    }
  });
  b.metrics = engine.run();
  return b;
}

const LlamaBenchMetrics::Test& test_of(const RunMetrics& m, const std::string& name) {
  for (const auto& t : testing::bench_of(m))
    if (t.name == name) return t;
  ADD_FAILURE() << "no test " << name;
  static const LlamaBenchMetrics::Test none;
  return none;
}

class LlamaBenchOnBackends : public ::testing::TestWithParam<std::pair<std::string, std::string>> {
};

TEST_P(LlamaBenchOnBackends, RunsTheTestsThroughTheFamilysBackend) {
  const auto& [device, backend] = GetParam();
  const Bench b = run_bench(bench_on(device, "[0, 1024]"));
  const RunMetrics& m = b.metrics;
  ASSERT_EQ(testing::bench_of(m).size(), 4u);
  // The family's own backend (kv_cache.backend auto), as a scenario resolves it.
  const ScenarioSpec s = testing::scenario_from_text(bench_on(device, "[0]"));
  const auto resolved = resolve_llama_backend("auto", s.device);
  ASSERT_TRUE(resolved.has_value());
  EXPECT_EQ(llama_backend_name(*resolved), backend);
  if (!testing::cells_of(m).backend.empty()) {
    EXPECT_EQ(testing::cells_of(m).backend, backend);
  }
  for (const auto& t : testing::bench_of(m)) {
    ASSERT_EQ(t.samples_ns.size(), 3u) << t.name;
    EXPECT_GT(t.samples_ns[0], 0);
    // Deterministic: every repetition starts from the same cleared cache.
    EXPECT_EQ(t.samples_ns[1], t.samples_ns[0]) << t.name;
    EXPECT_EQ(t.samples_ns[2], t.samples_ns[0]) << t.name;
  }
  // Passes: per test a warmup (pp: one ubatch of 128; tg: one decode),
  // then per repetition the depth fill (1024 tokens: two ubatches of 512)
  // and the timed run (pp: one ubatch; tg: 32 one-token decodes).
  const int64_t pp = 1 + 3 * 1, tg = 1 + 3 * 32, fill = 3 * 2;
  EXPECT_EQ(b.passes, 2 * (pp + tg) + 2 * fill);
  EXPECT_EQ(b.tokens, 2.0 * (128 + 1 + 3 * 128 + 3 * 32) + 2.0 * 3 * 1024);
  // The cache is cleared before every run but the timed run after a depth
  // fill, which keeps the depth's 1024 cells (llama-bench fills them first).
  EXPECT_EQ(testing::cells_of(m).server.prompt_reused_tokens, 2 * 3 * 1024);
  // A decode reads every weight once: tg's rate is under bandwidth / bytes.
  const double bound =
      static_cast<double>(s.device.memory_bandwidth) / static_cast<double>(s.model.weight_bytes());
  const double tg0 = bench_rate(test_of(m, "tg32")).mean;
  EXPECT_LT(tg0, bound);
  EXPECT_GT(tg0, 0.05 * bound);  // and not absurdly below it
  // Prompt processing batches 128 tokens a pass: faster per token than decode.
  EXPECT_GT(bench_rate(test_of(m, "pp128")).mean, 4 * tg0);
  // Depth: every decode attends over 1024 more cells.
  EXPECT_LT(bench_rate(test_of(m, "tg32 @ d1024")).mean, tg0);
  EXPECT_LT(bench_rate(test_of(m, "pp128 @ d1024")).mean, bench_rate(test_of(m, "pp128")).mean);
}

INSTANTIATE_TEST_SUITE_P(
    Families, LlamaBenchOnBackends,
    ::testing::Values(std::pair<std::string, std::string>{"ascend-910b2", "cann"},
                      std::pair<std::string, std::string>{"xeon-platinum-8480", "cpu"}));

// llama_bench needs llama.cpp's cells on the serving engine: another policy
// is refused at kv_cache.policy.
TEST(LlamaBenchOnBackends, AnotherPolicyIsRefusedAtItsKey) {
  const std::string yaml =
      "name: bench-paged\nseed: 3\ndevice: ascend-910b2\nmodel: llama-3.2-1b\n"
      "kv_cache: {policy: paged}\n"
      "workload:\n  kind: llama_bench\n  tests: [\"pp 128\"]\n";
  try {
    (void)testing::scenario_from_text(yaml);
    ADD_FAILURE() << "loaded";
  } catch (const std::exception& e) {
    EXPECT_NE(std::string(e.what()).find("kv_cache.policy"), std::string::npos) << e.what();
  }
}

}  // namespace
}  // namespace kvsim::KVSIM_TEST_FILE_SCOPE
