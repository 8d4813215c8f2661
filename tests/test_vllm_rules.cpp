// The scheduling and caching rules docs/vllm-rules.md lists, one test each
// on a hand-built request stream: which vLLM version each follows is
// written there, with the file and commit it was read from.
#include <gtest/gtest.h>

#include <memory>
#include <numeric>
#include <string>
#include <vector>

#include "scenario_helpers.hpp"
#include "sim/cache/paged_policy.hpp"
#include "sim/serve/engine.hpp"
#include "sim/serve/scheduler.hpp"
#include "tests/support/metric_parts.hpp"
#include "tests/support/step_commits.hpp"

namespace kvsim::KVSIM_TEST_FILE_SCOPE {
namespace {

constexpr int64_t kBlock = 4;

// A scheduler over a paged pool of `blocks` blocks of kBlock tokens, and
// the sequences it is given, stepped as the engine steps them.
struct Stream {
  Stream(int64_t blocks, int64_t budget, bool swap = false)
      : policy([&] {
          PagedParams p;
          p.num_blocks = blocks;
          p.block_size = kBlock;
          p.block_bytes = 1;
          p.host_blocks = swap ? blocks : 0;
          return p;
        }()),
        scheduler(
            [&] {
              SchedulerParams sp;
              sp.max_num_seqs = 64;
              sp.max_batched_tokens = budget;
              sp.swap = swap;
              return sp;
            }(),
            policy) {}

  // A request whose prompt is `shared` (common to every request given the
  // same ids) then `own` tokens of its own.
  Sequence* add(const std::vector<int32_t>& shared, int64_t own, int64_t output = 8) {
    auto seq = std::make_unique<Sequence>();
    seq->request.id = seqs.size();
    std::vector<int32_t> prompt = shared;
    for (int64_t i = 0; i < own; ++i)
      prompt.push_back(static_cast<int32_t>(100000 + 1000 * seqs.size() + i));
    std::vector<int32_t> out(static_cast<size_t>(output));
    std::iota(out.begin(), out.end(), static_cast<int32_t>(500000 + 1000 * seqs.size()));
    seq->request.prompt = std::move(prompt);
    seq->request.output = std::move(out);
    seq->prompt_tokens = seq->prompt_len();
    seq->output_tokens = seq->output_len();
    scheduler.add_waiting(seq.get());
    seqs.push_back(std::move(seq));
    return seqs.back().get();
  }
  // Schedules a step (the batch stays readable) ...
  void schedule() { scheduler.schedule(batch); }
  // ... and ends it: commits, samples, finishes the done ones.
  void finish_step() {
    commit_step_one_by_one(scheduler, policy, batch);
    for (const ScheduledSeq& item : batch.items) {
      Sequence* seq = item.seq;
      if (seq->computed < seq->known_tokens()) continue;
      if (++seq->generated >= seq->output_tokens) scheduler.finish(seq);
    }
    scheduler.step_done(++now);
  }
  void step() {
    schedule();
    finish_step();
  }
  void drain() {
    for (int i = 0; i < 1000 &&
                    scheduler.num_running() + scheduler.num_waiting() + scheduler.num_swapped() > 0;
         ++i)
      step();
    ASSERT_EQ(scheduler.num_running() + scheduler.num_waiting() + scheduler.num_swapped(), 0U);
    policy.check_drained();
  }
  std::vector<BlockId> table(const Sequence* seq) const { return policy.block_table(seq->slot); }

  PagedPolicy policy;
  Scheduler scheduler;
  ScheduledBatch batch;
  std::vector<std::unique_ptr<Sequence>> seqs;
  int64_t now = 0;
};

std::vector<int32_t> ids(int64_t n, int32_t first = 1) {
  std::vector<int32_t> v(static_cast<size_t>(n));
  std::iota(v.begin(), v.end(), first);
  return v;
}

// vLLM V1: KVCacheManager.allocate_slots caches the full blocks the
// scheduled tokens fix before the forward pass, so requests admitted in
// one pass share their prefix (paged_policy_scheduled.cpp).
TEST(VllmV1Caching, RequestsArrivingTogetherShareTheFirstOnesPrefixInTheSameStep) {
  Stream s(/*blocks=*/100, /*budget=*/1000);
  const std::vector<int32_t> prefix = ids(3 * kBlock);
  std::vector<Sequence*> burst;
  for (int i = 0; i < 4; ++i) burst.push_back(s.add(prefix, /*own=*/2));
  s.schedule();
  ASSERT_EQ(s.batch.items.size(), 4U);
  ASSERT_EQ(s.batch.summary.admitted.size(), 4U);
  EXPECT_EQ(burst[0]->cached_tokens, 0);
  const std::vector<BlockId> first = s.table(burst[0]);
  for (int i = 1; i < 4; ++i) {
    // A hit, counted as one (vLLM's num_computed_tokens and prefix-cache
    // stats): the three blocks the first request computes in this step.
    EXPECT_EQ(burst[i]->cached_tokens, 3 * kBlock) << i;
    EXPECT_EQ(burst[i]->computed, 3 * kBlock) << i;
    EXPECT_EQ(s.batch.items[i].tokens, 2) << i;
    const std::vector<BlockId> own = s.table(burst[i]);
    EXPECT_EQ(std::vector<BlockId>(own.begin(), own.begin() + 3),
              std::vector<BlockId>(first.begin(), first.begin() + 3))
        << i;
  }
  const CacheAccounting a = s.policy.accounting();
  EXPECT_EQ(a.prefix_query_tokens, 4 * 14);
  EXPECT_EQ(a.prefix_hit_tokens, 3 * 3 * kBlock);
  EXPECT_EQ(s.batch.total_tokens, 14 + 3 * 2);
  s.finish_step();
  s.drain();
}

// The same rule for a running prefill's later chunk: its blocks are
// findable by the admissions after it in the pass, whether the chunk takes
// new blocks (apply_grow) or fills the last one in place (grow_in_place).
TEST(VllmV1Caching, ALaterChunkOfARunningPrefillIsFoundByTheAdmissionsAfterIt) {
  for (const int64_t first_chunk : {int64_t{8}, int64_t{10}}) {
    // Budget: the first chunk, then (next step) the prompt's rest and room
    // for the second request.
    Stream s(/*blocks=*/100, /*budget=*/first_chunk);
    const std::vector<int32_t> prefix = ids(3 * kBlock);
    Sequence* a = s.add(prefix, /*own=*/0);  // 12 tokens: three blocks
    s.step();
    ASSERT_EQ(a->computed, first_chunk);
    Sequence* b = s.add(prefix, /*own=*/2);
    s.schedule();
    ASSERT_EQ(s.batch.items.size(), 2U) << first_chunk;
    EXPECT_EQ(s.batch.items[0].seq, a);
    // Block 2 (tokens 8..11) is computed by a's chunk in this step.
    EXPECT_EQ(b->cached_tokens, 3 * kBlock) << first_chunk;
    EXPECT_EQ(s.table(b)[2], s.table(a)[2]) << first_chunk;
    s.finish_step();
    s.drain();
  }
}

// vLLM V1 get_computed_blocks: the last token is always computed (the
// step needs its logits), so a prompt that is whole blocks shares all but
// the last of them, in the same step too.
TEST(VllmV1Caching, AHitNeverCoversTheLastTokenOfThePrompt) {
  Stream s(/*blocks=*/100, /*budget=*/1000);
  const std::vector<int32_t> prompt = ids(3 * kBlock);
  Sequence* a = s.add(prompt, 0);
  Sequence* b = s.add(prompt, 0);
  s.schedule();
  EXPECT_EQ(a->cached_tokens, 0);
  EXPECT_EQ(b->cached_tokens, 2 * kBlock);
  s.finish_step();
  s.drain();
}

// vLLM V1 scheduler: preemption only while the running requests are
// scheduled, of the most recently arrived (self.running.pop()), and a pass
// that preempted admits nobody (`if not preempted_reqs`): nothing a pass
// registered at allocation is dropped before its step runs. The victim's
// blocks keep their hashes (free_blocks), so the request that shares them
// keeps them and the victim's re-admission finds them again.
TEST(VllmV1Scheduling, RecomputePreemptionTakesTheLatestAndAdmitsNobodyInThatPass) {
  // 7 blocks: a and b (two shared blocks and a block of their own each)
  // take a block every 4 decodes until the pool is full.
  Stream s(/*blocks=*/7, /*budget=*/1000);
  const std::vector<int32_t> prefix = ids(2 * kBlock);
  s.add(prefix, 1, /*output=*/16);  // a
  Sequence* b = s.add(prefix, 1, /*output=*/16);
  s.step();
  EXPECT_EQ(b->cached_tokens, 2 * kBlock);  // in a's step
  bool preempted = false;
  for (int i = 0; i < 40 && !preempted; ++i) {
    s.schedule();
    if (!s.batch.preempted.empty()) {
      preempted = true;
      ASSERT_EQ(s.batch.preempted.size(), 1U);
      EXPECT_EQ(s.batch.preempted[0], b);  // the latest arrival
      EXPECT_EQ(b->state, SeqState::waiting);
      EXPECT_EQ(b->computed, 0);  // recompute: its KV is gone
      EXPECT_TRUE(s.batch.summary.admitted.empty());
      // a still holds the shared blocks; b finds them again when it is
      // re-admitted (counted apart from sharing: recompute_hit_tokens).
      EXPECT_GE(s.policy.lookup_prefix(b->tokens()).cached_tokens, 2 * kBlock);
    }
    s.finish_step();
  }
  ASSERT_TRUE(preempted);
  EXPECT_EQ(s.scheduler.preemptions(), 1U);
  s.drain();
  EXPECT_GT(s.policy.accounting().recompute_hit_tokens, 0);
}

// Swap is vLLM V0's preemption mode, an explicit option (V1 has none).
TEST(VllmV0Scheduling, SwapMovesThePreemptedBlocksToTheHostOnlyWhenAsked) {
  for (const bool swap : {false, true}) {
    Stream s(/*blocks=*/7, /*budget=*/1000, swap);
    const std::vector<int32_t> prefix = ids(2 * kBlock);
    s.add(prefix, 1, 16);
    Sequence* b = s.add(prefix, 1, 16);
    for (int i = 0; i < 40 && s.scheduler.preemptions() == 0; ++i) s.step();
    ASSERT_EQ(s.scheduler.preemptions(), 1U) << swap;
    EXPECT_EQ(b->state, swap ? SeqState::swapped : SeqState::waiting) << swap;
    EXPECT_EQ(s.policy.accounting().swapped_bytes > 0, swap) << swap;
    s.drain();
  }
}

// vLLM V0 without chunked prefill: a step is all prefills or all decodes.
TEST(VllmV0Scheduling, WithoutChunkedPrefillAStepWithAPrefillHasNoDecode) {
  PagedParams p;
  p.num_blocks = 100;
  p.block_size = kBlock;
  p.block_bytes = 1;
  PagedPolicy policy(p);
  SchedulerParams sp;
  sp.max_batched_tokens = 1000;
  sp.chunked_prefill = false;
  Scheduler scheduler(sp, policy);
  Sequence a, b;
  a.request.prompt = ids(6);
  a.request.output = ids(8, 900);
  b.request.prompt = ids(6, 50);
  b.request.output = ids(8, 950);
  b.request.id = 1;
  for (Sequence* seq : {&a, &b}) {
    seq->prompt_tokens = seq->prompt_len();
    seq->output_tokens = seq->output_len();
  }
  ScheduledBatch batch;
  scheduler.add_waiting(&a);
  scheduler.schedule(batch);
  commit_step_one_by_one(scheduler, policy, batch);
  ++a.generated;
  scheduler.step_done(1);
  scheduler.add_waiting(&b);
  scheduler.schedule(batch);
  ASSERT_EQ(batch.items.size(), 1U);  // b's prefill alone; a waits
  EXPECT_EQ(batch.items[0].seq, &b);
  commit_step_one_by_one(scheduler, policy, batch);
  ++b.generated;
  scheduler.step_done(2);
  scheduler.schedule(batch);
  EXPECT_EQ(batch.items.size(), 2U);  // both decode
  commit_step_one_by_one(scheduler, policy, batch);
  scheduler.finish(&a);
  scheduler.finish(&b);
  policy.check_drained();
}

constexpr const char* kBurst = R"(
name: burst
seed: 1
device: ascend-910b2
model: llama-3-8b
kv_cache: {policy: paged, dtype: fp16, block_size: 128, memory_fraction: 0.9}
workload:
  kind: synthetic
  requests: 200
  arrival: {process: closed, concurrency: 200}
  input_tokens: 128
  output_tokens: 16
  shared_prefix: {groups: 1, tokens: 512}
)";

// The burst the rule is about: 200 requests with one 4-block prefix all at
// t = 0. Every request but the first hits the prefix, those admitted in
// the first step with it included (after the step only, the first step's
// 13 admissions all missed: a hit rate of 187 x 512 / 128,000 = 0.748).
TEST(VllmV1Caching, ABurstOfSharedPrefixRequestsHitsTheirPrefixFromTheFirstStep) {
  const ScenarioSpec s = testing::scenario_from_text(kBurst);
  testing::CapturingSink sink;
  ServingEngine engine(s, &sink);
  const RunMetrics m = engine.run();
  ASSERT_EQ(m.requests.completed, 200);
  int missed = 0;
  for (const RequestRow& r : sink.request_rows) {
    if (r.cached_tokens == 0)
      ++missed;
    else
      EXPECT_EQ(r.cached_tokens, 512) << r.id;
  }
  EXPECT_EQ(missed, 1);
  EXPECT_DOUBLE_EQ(testing::pool_of(m).prefix_hit_rate, 199.0 * 512 / (200.0 * 640));
  EXPECT_EQ(m.requests.preempted, 0);
}

// vLLM V1 has only recompute preemption: it is the default here, swap the
// explicit V0 option.
TEST(VllmV1Scheduling, PreemptionIsByRecomputeUnlessSwapIsAsked) {
  const std::string squeezed = R"(
name: squeezed
seed: 7
device: ascend-910b2
model: llama-3-8b
kv_cache: {policy: paged, block_size: 128, memory_fraction: 0.26, swap_space: 2GiB}
scheduler: {max_num_seqs: 64, max_batched_tokens: 4096}
workload:
  kind: synthetic
  requests: 60
  arrival: {process: poisson, rate_per_s: 10}
  input_tokens: {dist: uniform, min: 512, max: 1536}
  output_tokens: {dist: uniform, min: 256, max: 768}
)";
  const ScenarioSpec by_default = testing::scenario_from_text(squeezed);
  ASSERT_NE(by_default.policy().block_pool(), nullptr);
  EXPECT_FALSE(by_default.policy().block_pool()->swap_preemption());
  ServingEngine engine(by_default, nullptr);
  const RunMetrics m = engine.run();
  EXPECT_EQ(m.requests.completed, 60);
  EXPECT_GT(m.requests.preempted, 0);
  EXPECT_EQ(testing::pool_of(m).swapped_bytes, 0);
  EXPECT_GT(testing::pool_of(m).recompute_hit_rate, 0);  // re-admissions looked up again

  const ScenarioSpec swap = testing::scenario_from_text(
      std::string(squeezed).replace(squeezed.find("swap_space"), 0, "preemption: swap, "));
  EXPECT_TRUE(swap.policy().block_pool()->swap_preemption());
  ServingEngine swapping(swap, nullptr);
  const RunMetrics w = swapping.run();
  EXPECT_EQ(w.requests.completed, 60);
  EXPECT_GT(testing::pool_of(w).swapped_bytes, 0);
}

}  // namespace
}  // namespace kvsim::KVSIM_TEST_FILE_SCOPE
