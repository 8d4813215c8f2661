// Decodes advanced in bulk (SchedulerParams::bulk_decodes) against the same
// run with every sequence scheduled one by one: over random workloads
// (prefix caching on and off, preemption by recompute and by swap, swap space
// that runs out, chunked prefill on and off, budgets and sequence caps that
// bind, several block sizes and eviction orders) every metric, every
// request row, every timeline row and every step's span must be identical
// to the bit.
#include <gtest/gtest.h>

#include <fmt/format.h>

#include <random>
#include <string>
#include <vector>

#include "scenario_helpers.hpp"
#include "sim/metrics.hpp"
#include "sim/serve/engine.hpp"

namespace kvsim {
namespace {
using testing::scenario_from_text;

// Every row a run streams, as text in order.
struct RecordingSink final : RunSink {
  std::vector<std::string> rows;
  void request(const RequestRow& r) override {
    rows.push_back(fmt::format("request {} {} {} {} {} {} {} {} {} {} {} {}", r.id, r.status,
                               r.arrival, r.first_token, r.finished, r.prompt_tokens,
                               r.output_tokens, r.cached_tokens, r.preemptions, r.session, r.turn,
                               r.started));
  }
  void timeline(const TimelineRow& r) override {
    rows.push_back(fmt::format("timeline {} {} {} {} {} {} {} {} {} {} {} {} {}", r.time, r.running,
                               r.waiting, r.swapped, r.blocks_used, r.kv_used_bytes, r.tokens_held,
                               r.step_tokens, r.step_latency, r.steps, r.step_seqs,
                               r.prefix_query_tokens, r.prefix_hit_tokens));
  }
  bool wants_spans() const override { return true; }
  void span(const SpanRow& r) override {
    rows.push_back(fmt::format("span {} {} {} {} {} {} {} {}", r.track, r.name, r.id, r.start,
                               r.duration, r.tokens, r.seqs, r.bytes));
  }
};

struct Outcome {
  std::string metrics;
  std::vector<std::string> rows;
  int64_t bulk_decodes = 0;
};

Outcome run(const ScenarioSpec& s, bool bulk) {
  RecordingSink sink;
  ServingEngine engine(s, &sink);
  engine.set_bulk_decodes(bulk);
  RunMetrics m = engine.run();  // throws if a block or token is left behind
  m.sim.wall_s = 0;
  return {metrics_to_json(m).dump(1), std::move(sink.rows), engine.bulk_decodes()};
}

// A random overloaded serving scenario: a squeezed pool of Llama-3-8B on a
// 910B2 (memory_fraction 0.26 leaves about 0.6 GB of KV), so that requests
// are preempted, swapped and re-admitted while others decode.
std::string random_scenario(uint32_t seed, const std::string& policy) {
  std::mt19937 rng(seed);
  auto pick = [&](auto... options) {
    const std::vector<std::string> all{options...};
    return all[std::uniform_int_distribution<size_t>(0, all.size() - 1)(rng)];
  };
  const bool chunked = pick("true", "false") == "true";
  const std::string budget = chunked ? pick("64", "96", "512", "4096") : pick("2048", "4096");
  const std::string prefix = policy == "paged"
                                 ? fmt::format(", prefix_caching: {}, eviction: {}",
                                               pick("true", "false"), pick("lru", "s3fifo"))
                                 : ", window: 256, update_mode: paged, prefix_caching: false";
  const std::string shared =
      pick("yes", "no") == "yes" ? "  shared_prefix: {groups: 3, tokens: 300}\n" : "";
  return fmt::format(R"(
name: bulk-vs-one-by-one
seed: {0}
device: ascend-910b2
model: llama-3-8b
kv_cache: {{policy: {1}, block_size: {2}, memory_fraction: {3}, preemption: {4},
            swap_space: {5}{6}}}
scheduler: {{max_num_seqs: {7}, max_batched_tokens: {8}, chunked_prefill: {9}}}
output: {{timeline_interval: 1ms}}
workload:
  kind: synthetic
  requests: 48
  arrival: {{process: poisson, rate_per_s: {10}}}
  input_tokens: {{dist: uniform, min: 16, max: 1200}}
  output_tokens: {{dist: uniform, min: 1, max: 300}}
{11})",
                     seed, policy, pick("16", "32", "128"), pick("0.26", "0.26", "0.27", "0.4"),
                     pick("recompute", "swap"), pick("2GiB", "64MiB"), prefix,
                     pick("4", "16", "64"), budget, chunked ? "true" : "false",
                     pick("20", "200", "2000"), shared);
}

TEST(BulkDecodes, PagedRunsAreIdenticalToOneByOneOverRandomWorkloads) {
  // Seeds 1-40, and some where the budget runs out behind a re-admitted
  // prefill among the bulk decodes (26, 49, 81, 103, 208, 374, 383).
  std::vector<uint32_t> seeds{26, 49, 81, 103, 208, 374, 383};
  for (uint32_t seed = 1; seed <= 40; ++seed) seeds.push_back(seed);
  int64_t bulk = 0;
  for (const uint32_t seed : seeds) {
    const std::string text = random_scenario(seed, "paged");
    const ScenarioSpec s = scenario_from_text(text);
    const Outcome one_by_one = run(s, false);
    const Outcome in_bulk = run(s, true);
    EXPECT_EQ(one_by_one.bulk_decodes, 0);
    bulk += in_bulk.bulk_decodes;
    ASSERT_EQ(one_by_one.metrics, in_bulk.metrics) << text;
    ASSERT_EQ(one_by_one.rows.size(), in_bulk.rows.size()) << text;
    for (size_t i = 0; i < one_by_one.rows.size(); ++i)
      ASSERT_EQ(one_by_one.rows[i], in_bulk.rows[i]) << "row " << i << " of\n" << text;
  }
  // The comparison means something only if most decodes went in bulk.
  EXPECT_GT(bulk, 10000);
}

TEST(BulkDecodes, PoliciesWithoutInPlaceRoomFallBackToOneByOne) {
  // sliding_window caps the attention context: the step is priced sequence
  // by sequence, so nothing goes in bulk, and the run is the general one.
  for (uint32_t seed = 101; seed <= 104; ++seed) {
    const std::string text = random_scenario(seed, "sliding_window");
    const ScenarioSpec s = scenario_from_text(text);
    const Outcome one_by_one = run(s, false);
    const Outcome in_bulk = run(s, true);
    EXPECT_EQ(in_bulk.bulk_decodes, 0);
    EXPECT_EQ(one_by_one.metrics, in_bulk.metrics) << text;
    EXPECT_EQ(one_by_one.rows, in_bulk.rows) << text;
  }
}

TEST(BulkDecodes, ShippedScenariosWithTiersPipelinesAndChunkLruAreIdenticalToOneByOne) {
  // Lower tiers fed by commits, a two-stage pipeline priced from the batch's
  // sums, and chunk_lru (no in-place room: one by one either way).
  for (const char* name :
       {"tiered-kv-910b2", "qwen3-235b-a22b-910b2-tp8-pp2", "rag-910b2-chunk-lru"}) {
    const ScenarioSpec s =
        load_scenario(testing::configs_dir() + "/scenarios/" + std::string(name) + ".yaml");
    const Outcome one_by_one = run(s, false);
    const Outcome in_bulk = run(s, true);
    EXPECT_EQ(one_by_one.metrics, in_bulk.metrics) << name;
    EXPECT_EQ(one_by_one.rows, in_bulk.rows) << name;
    EXPECT_EQ(in_bulk.bulk_decodes > 0, std::string(name) != "rag-910b2-chunk-lru") << name;
  }
}

TEST(BulkDecodes, SampledNumericsSeesTheSameRunAndChecksWithUnfollowedSequencesInBulk) {
  // The sampled checker follows one session in three step by step; the
  // others go in bulk except where they start or fill a block, which is all
  // it records of them. Its checks and errors, and the run, are those of
  // the run that schedules everyone one by one.
  int64_t bulk = 0;
  for (uint32_t seed = 1; seed <= 12; ++seed) {
    const std::string text =
        random_scenario(seed, "paged") + "numerics: {mode: sampled, sample_every: 3}\n";
    const ScenarioSpec s = scenario_from_text(text);
    const Outcome one_by_one = run(s, false);
    const Outcome in_bulk = run(s, true);
    bulk += in_bulk.bulk_decodes;
    ASSERT_EQ(one_by_one.metrics, in_bulk.metrics) << text;
    ASSERT_EQ(one_by_one.rows, in_bulk.rows) << text;
  }
  EXPECT_GT(bulk, 1000);
}

TEST(BulkDecodes, SaturatedDecodeBatchGoesMostlyInBulk) {
  // 64 long decodes in a roomy pool: between block boundaries and commits
  // every decode is in bulk (two steps in a 16-token block are one by one).
  const ScenarioSpec s = scenario_from_text(R"(
name: saturated
seed: 3
device: ascend-910b2
model: llama-3.2-1b
kv_cache: {policy: paged, block_size: 16, prefix_caching: true}
scheduler: {max_num_seqs: 64, max_batched_tokens: 8192}
workload:
  kind: synthetic
  requests: 64
  arrival: {process: poisson, rate_per_s: 1000000}
  input_tokens: {dist: uniform, min: 32, max: 64}
  output_tokens: {dist: uniform, min: 200, max: 260}
)");
  const Outcome one_by_one = run(s, false);
  const Outcome in_bulk = run(s, true);
  EXPECT_EQ(one_by_one.metrics, in_bulk.metrics);
  EXPECT_EQ(one_by_one.rows, in_bulk.rows);
  // ~64 x 230 decodes, of which 2 in 16 (and each request's first few) go one by one.
  EXPECT_GT(in_bulk.bulk_decodes, 64 * 230 * 3 / 4);
}

}  // namespace
}  // namespace kvsim
