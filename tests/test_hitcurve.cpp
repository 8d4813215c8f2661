// Cache-only replay and `kvsim hitcurve`.
#include <gtest/gtest.h>

#include <fmt/format.h>

#include <filesystem>
#include <fstream>
#include <nlohmann/json.hpp>
#include <sstream>

#include "cli/studies/hitcurve.hpp"
#include "scenario_helpers.hpp"
#include "sim/serve/engine.hpp"
#include "tests/support/metric_parts.hpp"
#include "tests/support/test_paths.hpp"

namespace kvsim::KVSIM_TEST_FILE_SCOPE {
namespace {

using testing::run_command;
using testing::scenario_from_text;

// K prefixes of P tokens (m = P / 128 blocks), each request = its prefix +
// one unique token, requests cycled round-robin over the prefixes n times.
constexpr int64_t kPrefixes = 4, kRounds = 5, kBlock = 128, kPrefixBlocks = 4;
constexpr int64_t kPrefixTokens = kPrefixBlocks * kBlock;  // P = 512

ScenarioSpec round_robin_scenario(const std::string& policy_extra = "") {
  // shared_fraction P / (P + 1) rounds to exactly P shared tokens.
  return scenario_from_text(fmt::format(
      "name: round-robin\nseed: 5\ndevice: ascend-910b2\nmodel: llama-3.2-1b\n"
      "kv_cache: {{policy: paged, block_size: {}{}}}\n"
      "workload:\n  kind: fixed\n  requests: {}\n  arrival: {{process: constant, rate_per_s: 1}}\n"
      "  input_tokens: {}\n  output_tokens: 1\n"
      "  prefix: {{shared_fraction: {}, groups: {}}}\n",
      kBlock, policy_extra, kPrefixes * kRounds, kPrefixTokens + 1,
      static_cast<double>(kPrefixTokens) / (kPrefixTokens + 1), kPrefixes));
}

TEST(HitCurve, RoundRobinPrefixesHaveTheExactAnswer) {
  // Working set: every prefix's m blocks plus the block its unique token
  // takes, K (m + 1) = 20 blocks. With at most (K - 1)(m + 1) = 15 blocks,
  // the K - 1 other requests between two visits of a prefix allocate every
  // block of the pool (LRU reuses the oldest free block first), so nothing of
  // it survives: hit rate 0. From K (m + 1) blocks on, every visit after the
  // first finds its whole prefix: (n - 1) / n of the prefix tokens.
  const ScenarioSpec spec = round_robin_scenario();
  const std::vector<int64_t> capacities = {
      kBlock * 8, kBlock * (kPrefixes - 1) * (kPrefixBlocks + 1),
      kBlock * kPrefixes * (kPrefixBlocks + 1), kBlock * 1000, kBlock * 100000};
  const HitCurve curve = compute_hit_curve(spec, capacities);
  ASSERT_EQ(curve.points.size(), capacities.size());
  const int64_t prompt_tokens = kPrefixes * kRounds * (kPrefixTokens + 1);
  for (size_t i = 0; i < curve.points.size(); ++i) {
    const auto& r = curve.points[i].replay;
    EXPECT_EQ(r.requests, kPrefixes * kRounds);
    EXPECT_EQ(r.prompt_tokens, prompt_tokens);
    EXPECT_EQ(r.oversized_requests, 0);
    if (i < 2) {
      EXPECT_EQ(r.hit_tokens, 0) << "capacity " << capacities[i];
    } else {
      // Every prefix token of rounds 2..n: (n - 1) / n of the prefix tokens.
      EXPECT_EQ(r.hit_tokens, (kRounds - 1) * kPrefixes * kPrefixTokens)
          << "capacity " << capacities[i];
      EXPECT_DOUBLE_EQ(r.hit_rate(), static_cast<double>(kRounds - 1) / kRounds *
                                         static_cast<double>(kPrefixTokens) /
                                         static_cast<double>(kPrefixTokens + 1));
    }
  }
  EXPECT_TRUE(curve.monotone());
}

TEST(HitCurve, PromptLargerThanThePoolIsAMissAndCounted) {
  const HitCurve curve = compute_hit_curve(round_robin_scenario(), {kBlock * 2});
  EXPECT_EQ(curve.points[0].replay.oversized_requests, kPrefixes * kRounds);
  EXPECT_EQ(curve.points[0].replay.hit_tokens, 0);
}

TEST(HitCurve, PrefixCachingOffNeverHits) {
  const HitCurve curve =
      compute_hit_curve(round_robin_scenario(", prefix_caching: false"), {kBlock * 100000});
  EXPECT_EQ(curve.points[0].replay.hit_tokens, 0);
}

TEST(HitCurve, MatchesTheServingRunWhenNothingIsEvicted) {
  // A closed loop of one client serves requests one at a time in arrival
  // order, exactly as the replay does: same hits with a pool that never
  // evicts.
  const ScenarioSpec spec = scenario_from_text(
      "name: one-client\nseed: 9\ndevice: ascend-910b2\nmodel: llama-3.2-1b\n"
      "kv_cache: {policy: paged, block_size: 16}\n"
      "workload:\n  kind: synthetic\n  requests: 40\n  arrival: {process: closed, concurrency: 1}\n"
      "  input_tokens: {dist: uniform, min: 10, max: 200}\n  output_tokens: 3\n"
      "  shared_prefix: {groups: 3, tokens: 100}\n");
  const HitCurve curve = compute_hit_curve(spec, {int64_t{1} << 24});
  ServingEngine engine(spec, nullptr);
  const RunMetrics m = engine.run();
  EXPECT_DOUBLE_EQ(curve.points[0].replay.hit_rate(), testing::pool_of(m).prefix_hit_rate);
  EXPECT_GT(testing::pool_of(m).prefix_hit_rate, 0.2);
}

TEST(HitCurve, OutputsStateTheDefinition) {
  const HitCurve curve = compute_hit_curve(round_robin_scenario(), {kBlock * 30});
  const std::string csv = hit_curve_csv(curve);
  EXPECT_EQ(csv.rfind("# hit_rate = hit_tokens / prompt_tokens", 0), 0u);
  EXPECT_NE(csv.find("\ncapacity_tokens,cache_blocks,"), std::string::npos);
  const auto json = hit_curve_json(curve);
  EXPECT_NE(json["hit_definition"].get<std::string>().find("tokens served from cache / prompt "
                                                           "tokens"),
            std::string::npos);
  EXPECT_NE(hit_curve_markdown(curve).find("tokens served from cache / prompt tokens"),
            std::string::npos);
}

TEST(HitCurve, ChunkLruCountsChunkPoolHitsAndMatchesItsRun) {
  // The shipped RAG scenario, shortened: the capacity sizes the chunk pool;
  // at the run's own chunk pool the replay's hit rate is the run's
  // kv_cache.chunk_hit_rate (the run is almost sequential at 2 requests/s).
  const ScenarioSpec spec =
      load_scenario(std::string(KVSIM_SOURCE_DIR) + "/configs/scenarios/rag-910b2-chunk-lru.yaml",
                    {"workload.requests=120"});
  ServingEngine engine(spec, nullptr);
  const RunMetrics m = engine.run();
  const int64_t pool_tokens = testing::chunks_of(m).chunk_pool_bytes /
                              testing::pool_of(m).block_bytes *
                              spec.policy().values().integer("block_size");
  const HitCurve curve = compute_hit_curve(spec, {1000, pool_tokens, 100'000'000});
  EXPECT_TRUE(curve.monotone());
  EXPECT_NEAR(curve.points[1].replay.hit_rate(), testing::chunks_of(m).chunk_hit_rate, 0.02);
  EXPECT_LT(curve.points[0].replay.hit_rate(), 0.01);
  EXPECT_GT(curve.points[2].replay.hit_rate(), curve.points[1].replay.hit_rate());
  EXPECT_EQ(curve.points[2].replay.evictions, 0u);
}

std::string shared_trace(const char* name) {
  return std::string(KVSIM_SHARED_DATA_DIR) + "/traces/" + name;
}

TEST(HitCurve, MooncakeSyntheticTraceIsMonotone) {
  const std::string trace = shared_trace("mooncake_synthetic.jsonl");
  if (!std::filesystem::exists(trace))
    GTEST_SKIP() << trace << " is absent (shared data is referenced in place, never copied)";
  const ScenarioSpec spec = scenario_from_text(
      "name: mooncake-synthetic\nseed: 42\ndevice: ascend-910b2\nmodel: llama-3.2-3b\n"
      "parallel: {tensor: 8}\nkv_cache: {policy: paged, block_size: 512}\n"
      "workload:\n  trace: {format: mooncake, path: " +
      trace + "}\n");
  // A shorter list than the CLI's 1e4..1e8 sweep, to stay fast.
  const HitCurve curve = compute_hit_curve(spec, {10'000, 1'000'000, 100'000'000});
  EXPECT_TRUE(curve.monotone());
  EXPECT_EQ(curve.points[0].replay.requests, 3993);
  EXPECT_LT(curve.points[0].replay.hit_rate(), 0.01);
  EXPECT_GT(curve.points[2].replay.hit_rate(), 0.6);  // 0.650 when written
  EXPECT_EQ(curve.points[2].replay.evictions, 0u);    // 1e8 tokens hold the whole trace
  EXPECT_LT(curve.points[1].replay.hit_rate(), curve.points[2].replay.hit_rate());
}

TEST(HitCurveCli, WritesTheFourFilesAndRejectsBadCapacities) {
  const std::string dir = (std::filesystem::temp_directory_path() / "kvsim_hitcurve_cli").string();
  std::filesystem::remove_all(dir);
  const std::string scenario =
      std::string(KVSIM_SOURCE_DIR) + "/configs/scenarios/prefix-bench-shared75.yaml";
  const auto ok = run_command(std::string(KVSIM_BINARY) + " hitcurve " + scenario +
                              " --capacity-tokens 1e4,2e5,1e6 --out " + dir);
  ASSERT_EQ(ok.exit_code, 0) << ok.output;
  for (const char* f : {"hitcurve.csv", "hitcurve.json", "hitcurve.md", "hitcurve.html"})
    EXPECT_TRUE(std::filesystem::exists(dir + "/" + f)) << f;
  std::ifstream in(dir + "/hitcurve.json");
  const auto j = nlohmann::json::parse(in);
  ASSERT_EQ(j["points"].size(), 3u);
  // 8 prefixes of 12 blocks + a request's own 4 blocks fit in 2e5 tokens:
  // the closed loop's 256 requests hit 0.75 x 248 / 256.
  EXPECT_DOUBLE_EQ(j["points"][1]["hit_rate"].get<double>(), 0.75 * 248 / 256);
  EXPECT_EQ(j["monotone"], true);

  const auto bad = run_command(std::string(KVSIM_BINARY) + " hitcurve " + scenario +
                               " --capacity-tokens 1e4,lots --out " + dir + "-bad");
  EXPECT_EQ(bad.exit_code, 2) << bad.output;
  EXPECT_NE(bad.output.find("--capacity-tokens:1:1"), std::string::npos) << bad.output;
  EXPECT_FALSE(std::filesystem::exists(dir + "-bad"));
  std::filesystem::remove_all(dir);
}

}  // namespace
}  // namespace kvsim::KVSIM_TEST_FILE_SCOPE
