// kind: llama_bench: llama-bench's tests on the dialog engine under
// llama_cells. The t/s figures are checked against the engine's own pass
// records (an independent sum of what each pass and KV update took), the
// depth against depth 0, and bad tests against their file:line:col.
#include <gtest/gtest.h>

#include <cmath>
#include <fstream>
#include <string>
#include <vector>

#include "base/diagnostics.hpp"
#include "scenario_helpers.hpp"
#include "sim/genie/genie_engine.hpp"
#include "sim/genie/genie_metrics.hpp"
#include "tests/support/metric_parts.hpp"
#include "tests/support/test_paths.hpp"

namespace kvsim::KVSIM_TEST_FILE_SCOPE {
namespace {

std::string bench_yaml(const std::string& tests, const std::string& depth, int reps = 2,
                       const std::string& extra = "") {
  return "name: bench-test\nseed: 3\ndevice: snapdragon-8-elite\n"
         "model: llama-3.2-3b-instruct-w4a16\n"
         "kv_cache: {policy: llama_cells, behaviour: current, dtype: fp16, ctx_size: 2048, "
         "ar_variants: [1, 128], update_threads: 4}\n"
         "workload:\n  kind: llama_bench\n  tests: " +
         tests + "\n  depth: " + depth + "\n  repetitions: " + std::to_string(reps) + "\n" + extra;
}

struct BenchRun {
  RunMetrics metrics;
  std::vector<GeniePassRecord> passes;
};

BenchRun run_bench(const std::string& yaml) {
  const ScenarioSpec s = testing::scenario_from_text(yaml);
  BenchRun r;
  GenieEngine engine(s, nullptr);
  engine.set_pass_callback([&r](const GeniePassRecord& p) { r.passes.push_back(p); });
  r.metrics = engine.run();
  return r;
}

// When turn `turn`'s last pass and its KV update ended: the next turn
// starts then (no think time between llama-bench's runs).
TimeNs turn_end(const std::vector<GeniePassRecord>& passes, int32_t turn) {
  TimeNs end = -1;
  for (const GeniePassRecord& p : passes)
    if (p.turn == turn) end = p.start + p.timing.latency + p.update_time;
  return end;
}

struct TurnPasses {
  int64_t prefill_tokens = 0, decode_passes = 0;
};
TurnPasses turn_passes(const std::vector<GeniePassRecord>& passes, int32_t turn) {
  TurnPasses t;
  for (const GeniePassRecord& p : passes) {
    if (p.turn != turn) continue;
    if (p.kind == GeniePassKind::prefill) t.prefill_tokens += p.htp.useful_tokens;
    if (p.kind == GeniePassKind::decode) ++t.decode_passes;
  }
  return t;
}

const LlamaBenchMetrics::Test& bench_test(const RunMetrics& m, const std::string& name) {
  for (const auto& t : testing::bench_of(m))
    if (t.name == name) return t;
  throw std::runtime_error("no test " + name);
}

std::string load_error(const std::string& yaml) {
  try {
    (void)testing::scenario_from_text(yaml);
  } catch (const config::ConfigError& e) {
    return e.what();
  }
  return "";
}

TEST(LlamaBench, PpRateIsItsTokensOverThePrefillTimeOfThatRun) {
  // Turns: 0 the warmup, 1 and 2 the two timed repetitions.
  const BenchRun r = run_bench(bench_yaml("[\"pp 300\"]", "[0]"));
  const auto& t = bench_test(r.metrics, "pp300");
  ASSERT_EQ(t.samples_ns.size(), 2u);
  for (int32_t rep = 0; rep < 2; ++rep) {
    const int32_t turn = 1 + rep;
    const TurnPasses p = turn_passes(r.passes, turn);
    EXPECT_EQ(p.prefill_tokens, 300);  // the prompt and nothing else
    EXPECT_EQ(p.decode_passes, 0);
    const TimeNs prefill = turn_end(r.passes, turn) - turn_end(r.passes, turn - 1);
    ASSERT_GT(prefill, 0);
    EXPECT_EQ(t.samples_ns[static_cast<size_t>(rep)], prefill);
  }
  const BenchRate rate = bench_rate(t);
  const double expected =
      300e9 / static_cast<double>(turn_end(r.passes, 1) - turn_end(r.passes, 0));
  EXPECT_NEAR(rate.mean, expected, 1e-9 * expected);
  // Deterministic runs: every repetition takes the same time.
  EXPECT_EQ(rate.stdev, 0.0);
}

TEST(LlamaBench, TgAtDepthIsSlowerThanAtDepthZero) {
  // Turns: warmup tg1, rep 0, rep 1 (depth 0); warmup, then (depth, rep) twice.
  const BenchRun r = run_bench(bench_yaml("[\"tg 64\"]", "[0, 1024]"));
  const auto& d0 = bench_test(r.metrics, "tg64");
  const auto& d1024 = bench_test(r.metrics, "tg64 @ d1024");
  EXPECT_EQ(d1024.n_depth, 1024);
  // tg 64 is 64 one-token decodes: the 1-token turn's AR-1 pass, then 63.
  const TurnPasses p = turn_passes(r.passes, 1);
  EXPECT_EQ(p.prefill_tokens, 1);
  EXPECT_EQ(p.decode_passes, 63);
  // Attention reads 1024 more cells a token: slower, and the depth's own
  // prefill is not in the time (it would cost more than the whole tg64).
  EXPECT_LT(bench_rate(d1024).mean, bench_rate(d0).mean);
  const TimeNs depth_fill = turn_end(r.passes, 4) - turn_end(r.passes, 3);
  const TimeNs timed = turn_end(r.passes, 5) - turn_end(r.passes, 4);
  EXPECT_EQ(d1024.samples_ns[0], timed);
  EXPECT_EQ(turn_passes(r.passes, 4).prefill_tokens, 1024);
  EXPECT_GT(depth_fill, 0);
  EXPECT_GT(bench_rate(d1024).mean, 64e9 / static_cast<double>(timed + depth_fill));
}

TEST(LlamaBench, PromptPlusGenerationTimesBothAndCountsBoth) {
  // Turns: warmup pp, warmup tg1, rep 0.
  const BenchRun r = run_bench(bench_yaml("[\"pp 200 + tg 16\"]", "[0]", 1));
  const auto& t = bench_test(r.metrics, "pp200+tg16");
  EXPECT_EQ(t.n_prompt, 200);
  EXPECT_EQ(t.n_gen, 16);
  const TurnPasses p = turn_passes(r.passes, 2);
  EXPECT_EQ(p.prefill_tokens, 200);
  EXPECT_EQ(p.decode_passes, 16);
  const TimeNs time = turn_end(r.passes, 2) - turn_end(r.passes, 1);
  EXPECT_NEAR(bench_rate(t).mean, 216e9 / static_cast<double>(time), 1e-6);
}

TEST(LlamaBench, SameScenarioSameTable) {
  const std::string y = bench_yaml("[\"pp 128\", \"tg 8\"]", "[0, 256]");
  const BenchRun a = run_bench(y);
  const BenchRun b = run_bench(y);
  ASSERT_EQ(testing::bench_of(a.metrics).size(), 4u);
  for (size_t i = 0; i < 4; ++i)
    EXPECT_EQ(testing::bench_of(a.metrics)[i].samples_ns,
              testing::bench_of(b.metrics)[i].samples_ns);
}

TEST(LlamaBench, BadTestsNameTheKeyWithItsPlace) {
  std::string e = load_error(bench_yaml("[\"pp 512\", \"pp 0\"]", "[0]"));
  EXPECT_NE(e.find("test.yaml:8:21:"), std::string::npos) << e;
  EXPECT_NE(e.find("workload.tests[1]"), std::string::npos) << e;
  EXPECT_NE(e.find("0 tokens"), std::string::npos) << e;
  e = load_error(bench_yaml("[\"tg 0\"]", "[0]"));
  EXPECT_NE(e.find("workload.tests[0]"), std::string::npos) << e;
  e = load_error(bench_yaml("[\"pg 512,128\"]", "[0]"));
  EXPECT_NE(e.find("workload.tests[0]"), std::string::npos) << e;
  EXPECT_NE(e.find("not a llama-bench test"), std::string::npos) << e;
  EXPECT_NE(e.find("pp N + tg M"), std::string::npos) << e;
  e = load_error(bench_yaml("[\"pp 512 + pp 5\"]", "[0]"));
  EXPECT_NE(e.find("not a llama-bench test"), std::string::npos) << e;
  e = load_error(bench_yaml("[]", "[0]"));
  EXPECT_NE(e.find("workload.tests"), std::string::npos) << e;
  e = load_error(bench_yaml("[\"pp 512\"]", "[0]", 2, "  reps: 3\n"));
  EXPECT_NE(e.find("workload.reps"), std::string::npos) << e;
  // Past ctx_size after the depth: refused at load, not cut short.
  e = load_error(bench_yaml("[\"pp 512 + tg 64\"]", "[1600]"));
  EXPECT_NE(e.find("workload.tests"), std::string::npos) << e;
  EXPECT_NE(e.find("ctx_size 2048"), std::string::npos) << e;
}

TEST(LlamaBench, BadTestIsExitTwo) {
  const std::string path = ::testing::TempDir() + "/llama_bench_bad.yaml";
  std::ofstream(path) << bench_yaml("[\"pp 512\", \"tg zero\"]", "[0]");
  const auto r = testing::run_command(std::string(KVSIM_BINARY) + " run " + path + " --out " +
                                      ::testing::TempDir() + "/llama_bench_bad");
  EXPECT_EQ(r.exit_code, 2) << r.output;
  EXPECT_NE(r.output.find("llama_bench_bad.yaml:8:21:"), std::string::npos) << r.output;
  EXPECT_NE(r.output.find("workload.tests[1]"), std::string::npos) << r.output;
}

}  // namespace
}  // namespace kvsim::KVSIM_TEST_FILE_SCOPE
