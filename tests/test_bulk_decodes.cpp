// Decodes advanced in bulk (SchedulerParams::bulk_decodes) against the same
// run with every sequence scheduled one by one: over random workloads
// (prefix caching on and off, preemption by recompute and by swap, swap space
// that runs out, chunked prefill on and off, budgets and sequence caps that
// bind, several block sizes and eviction orders) every metric, every
// request row, every timeline row and every step's span must be identical
// to the bit.
#include <gtest/gtest.h>

#include <fmt/format.h>

#include <algorithm>
#include <random>
#include <sstream>
#include <string>
#include <vector>

#include "scenario_helpers.hpp"
#include "sim/cache/paged_policy_base.hpp"
#include "sim/core/metrics.hpp"
#include "sim/engine/arrival_pump.hpp"
#include "sim/numerics/numerics_observer.hpp"
#include "sim/scenario/metrics_document.hpp"
#include "sim/serve/engine.hpp"

namespace kvsim::KVSIM_TEST_FILE_SCOPE {
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
  ServingEngine engine(s, &sink, make_numerics_observer);
  engine.set_bulk_decodes(bulk);
  RunMetrics m = engine.run();  // throws if a block or token is left behind
  m.sim.wall_s = 0;
  return {metrics_to_json(m).dump(1), std::move(sink.rows), engine.bulk_decodes()};
}

// A random overloaded serving scenario: a squeezed pool of Llama-3-8B on a
// 910B2 (memory_fraction 0.26 leaves about 0.6 GB of KV), so that requests
// are preempted, swapped and re-admitted while others decode.
std::string random_scenario(uint32_t seed, const std::string& policy,
                            const std::string& block_size = "") {
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
                     seed, policy, block_size.empty() ? pick("16", "32", "128") : block_size,
                     pick("0.26", "0.26", "0.27", "0.4"), pick("recompute", "swap"),
                     pick("2GiB", "64MiB"), prefix, pick("4", "16", "64"), budget,
                     chunked ? "true" : "false", pick("20", "200", "2000"), shared);
}

// Runs the random scenario `text` one by one and in bulk, asserts that the
// two runs are identical, and returns the bulk run's bulk decodes.
int64_t expect_bulk_identical(const std::string& text) {
  const ScenarioSpec s = scenario_from_text(text);
  const Outcome one_by_one = run(s, false);
  const Outcome in_bulk = run(s, true);
  EXPECT_EQ(one_by_one.bulk_decodes, 0);
  EXPECT_EQ(one_by_one.metrics, in_bulk.metrics) << text;
  EXPECT_EQ(one_by_one.rows.size(), in_bulk.rows.size()) << text;
  for (size_t i = 0; i < std::min(one_by_one.rows.size(), in_bulk.rows.size()); ++i)
    if (one_by_one.rows[i] != in_bulk.rows[i]) {
      ADD_FAILURE() << "row " << i << " differs:\n"
                    << one_by_one.rows[i] << "\n"
                    << in_bulk.rows[i] << "\nof\n"
                    << text;
      break;
    }
  return in_bulk.bulk_decodes;
}

TEST(BulkDecodes, PagedRunsAreIdenticalToOneByOneOverRandomWorkloads) {
  // Seeds 1-40, and some where the budget runs out behind a re-admitted
  // prefill among the bulk decodes (26, 49, 81, 103, 208, 374, 383).
  std::vector<uint32_t> seeds{26, 49, 81, 103, 208, 374, 383};
  for (uint32_t seed = 1; seed <= 40; ++seed) seeds.push_back(seed);
  int64_t bulk = 0;
  for (const uint32_t seed : seeds) {
    bulk += expect_bulk_identical(random_scenario(seed, "paged"));
    if (::testing::Test::HasFailure()) return;
  }
  // The comparison means something only if most decodes went in bulk.
  EXPECT_GT(bulk, 10000);
}

TEST(BulkDecodes, TinyBlocksWithAFillAndANewBlockInMostStepsAreIdenticalToOneByOne) {
  // Blocks of 1-4 tokens: nearly every bulk step of a run fills its block
  // (a commit after the step, in batch order among the items') or needs a
  // new one (allocated in arrival order among the one-by-one entries), and
  // with block_size 1 both in the same step; the pool runs dry in the
  // middle of such steps and preempts.
  int64_t bulk = 0;
  for (uint32_t seed = 201; seed <= 224; ++seed) {
    bulk += expect_bulk_identical(random_scenario(seed, "paged", std::to_string(1 << (seed % 3))));
    if (::testing::Test::HasFailure()) return;
  }
  EXPECT_GT(bulk, 10000);
}

// Hand-made requests at their own arrival times.
class ListedRequests final : public RequestSource {
 public:
  explicit ListedRequests(std::vector<Request> requests) : requests_(std::move(requests)) {}
  std::optional<TimeNs> next_arrival() const override {
    if (next_ == requests_.size()) return std::nullopt;
    return requests_[next_].arrival;
  }
  Request take() override { return std::move(requests_[next_++]); }
  bool exhausted() const override { return next_ == requests_.size(); }

 private:
  std::vector<Request> requests_;
  size_t next_ = 0;
};

struct StepStarts final : RunSink {
  std::vector<TimeNs> starts;
  void request(const RequestRow&) override {}
  void timeline(const TimelineRow&) override {}
  bool wants_spans() const override { return true; }
  void span(const SpanRow& r) override {
    if (r.track == "step") starts.push_back(r.start);
  }
};

struct SameContentRun {
  std::vector<TimeNs> step_starts;
  std::vector<bool> hashed;  // per block after the run: holds its content's canonical copy
  int64_t bulk_decodes = 0;
};

SameContentRun run_requests(const ScenarioSpec& s, std::vector<Request> requests, bool bulk) {
  Simulator sim;
  ListedRequests source(std::move(requests));
  ArrivalPump pump(sim, source);
  StepStarts sink;
  ServingEngine engine(s, sim, pump, &sink, make_numerics_observer);
  engine.set_bulk_decodes(bulk);
  run_engine_alone(engine, sim, pump);
  const auto* paged = dynamic_cast<const PagedPolicyBase*>(engine.cache_policy());
  SameContentRun out{std::move(sink.starts), {}, engine.bulk_decodes()};
  for (BlockId b = 0; b < paged->pool().num_blocks(); ++b)
    out.hashed.push_back(paged->pool().has_hash(b));
  return out;
}

TEST(BulkDecodes, TwoCopiesOfOneBlockCommittedInOneStepKeepTheEarlierArrivalsAsCanonical) {
  // B arrives first with prompt P (8 tokens) and output O; A later with
  // prompt P + O[0:7] and output O[7:], the same tokens. A arrives as B
  // starts computing token 14: its prefill hits B's three full blocks and
  // computes tokens 12-14 beside B's decode; in the next step both compute
  // token 15 and fill a block of the same content, A as an item (its
  // first decode) and B in bulk. B comes first in batch order, so B's
  // block is the one the pool keeps for that content (the second copy is
  // not registered): as in the one-by-one run.
  const ScenarioSpec s = scenario_from_text(R"(
name: same-content
seed: 1
device: ascend-910b2
model: llama-3.2-1b
kv_cache: {policy: paged, block_size: 4, prefix_caching: true, memory_fraction: 0.3}
scheduler: {max_num_seqs: 8, max_batched_tokens: 512}
workload:
  kind: synthetic
  requests: 1
  arrival: {process: poisson, rate_per_s: 1}
  input_tokens: {dist: uniform, min: 8, max: 8}
  output_tokens: {dist: uniform, min: 8, max: 8}
)");
  std::vector<int32_t> prompt, output;
  for (int32_t t = 0; t < 8; ++t) prompt.push_back(1000 + t);
  for (int32_t t = 0; t < 40; ++t) output.push_back(2000 + t);
  auto requests = [&](TimeNs second_at) {
    std::vector<Request> r(2);
    r[0].id = 0;
    r[0].prompt = TokenContent(prompt);
    r[0].output = TokenContent(output);
    r[1].id = 1;
    r[1].arrival = second_at;
    std::vector<int32_t> longer = prompt;
    longer.insert(longer.end(), output.begin(), output.begin() + 7);
    r[1].prompt = TokenContent(longer);
    r[1].output = TokenContent(std::vector<int32_t>(output.begin() + 7, output.end()));
    return r;
  };
  // B alone (A far later): its step k (from 1) computes token 6 + k, so
  // step 8 computes token 14.
  const SameContentRun alone = run_requests(s, requests(1000 * kNsPerS), false);
  ASSERT_GT(alone.step_starts.size(), 8u);
  const TimeNs at = alone.step_starts[7];
  const SameContentRun one_by_one = run_requests(s, requests(at), false);
  const SameContentRun in_bulk = run_requests(s, requests(at), true);
  EXPECT_GT(in_bulk.bulk_decodes, 40);
  EXPECT_EQ(one_by_one.step_starts, in_bulk.step_starts);
  EXPECT_EQ(one_by_one.hashed, in_bulk.hashed);
  // Every block of A past the shared ones is a copy of one of B's: the pool
  // keeps one of each, as many as B alone registers.
  int64_t hashed_alone = 0, hashed_both = 0;
  for (const bool h : alone.hashed) hashed_alone += h ? 1 : 0;
  for (const bool h : in_bulk.hashed) hashed_both += h ? 1 : 0;
  EXPECT_EQ(hashed_both, hashed_alone);
}

TEST(BulkDecodes, PoliciesWithoutInPlaceRoomFallBackToOneByOne) {
  // sliding_window caps the attention context: the step is priced sequence
  // by sequence, so nothing goes in bulk, and the run is the general one.
  for (uint32_t seed = 101; seed <= 104; ++seed) {
    EXPECT_EQ(expect_bulk_identical(random_scenario(seed, "sliding_window")), 0);
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
  // 64 long decodes in a roomy pool: a run goes on through its block fills
  // (commits) and new blocks, so each request is one by one only in its
  // prefill step, its first decode and its last two steps.
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
  int64_t outputs = 0;  // every request's output tokens, from its row
  for (const std::string& row : in_bulk.rows) {
    if (row.rfind("request ", 0) != 0) continue;
    std::istringstream fields(row);
    std::string field;
    for (int i = 0; i < 8; ++i) fields >> field;
    outputs += std::stoll(field);
  }
  EXPECT_GT(outputs, 64 * 200);
  EXPECT_GE(in_bulk.bulk_decodes, outputs - 64 * 4);
}

}  // namespace
}  // namespace kvsim::KVSIM_TEST_FILE_SCOPE
