// llama-server's slots under the serving engine (sim/cache/llama_cells_pool.hpp):
// the slot choice by prompt similarity or LRU, prompt reuse within a slot,
// the host prompt cache (sim/cache/llama_prompt_cache.hpp) saved when a slot
// is handed over and restored by longest common prefix, one unified cell
// cache against a stream per slot, and the server's context rule.
#include <gtest/gtest.h>

#include <algorithm>
#include <numeric>
#include <string>
#include <vector>

#include "scenario_helpers.hpp"
#include "sim/cache/llama_cells_pool.hpp"
#include "sim/cache/llama_prompt_cache.hpp"
#include "sim/scenario/run_scenario.hpp"
#include "sim/serve/engine.hpp"
#include "sim/serve/scheduler.hpp"
#include "tests/support/metric_parts.hpp"

namespace kvsim::KVSIM_TEST_FILE_SCOPE {
namespace {

LlamaCellsPoolParams params(int64_t cells, int64_t n_parallel, bool unified, Bytes cache_ram) {
  ModelSpec m;
  m.num_hidden_layers = 2;
  m.num_key_value_heads = 2;
  m.head_dim = 32;  // a cell: 2 layers x (K + V) x 64 f16 values = 512 B
  LlamaCellsPoolParams p;
  p.sizing = llama_kv_sizing(m, cells, kernels::GgmlType::f16, kernels::GgmlType::f16);
  p.behaviour = LlamaBehaviour::current;
  p.n_parallel = n_parallel;
  p.kv_unified = unified;
  p.cache_ram = cache_ram;
  return p;
}

std::vector<int32_t> run_of(int32_t first, int64_t n) {
  std::vector<int32_t> v(static_cast<size_t>(n));
  std::iota(v.begin(), v.end(), first);
  return v;
}

std::vector<int32_t> cat(std::vector<int32_t> a, const std::vector<int32_t>& b) {
  a.insert(a.end(), b.begin(), b.end());
  return a;
}

TokenView view_of(const std::vector<int32_t>& ids) {
  TokenView v;
  v.prompt = ids.data();
  v.prompt_len = static_cast<int64_t>(ids.size());
  return v;
}

// One request through the pool as the scheduler admits it (its whole
// prompt in one step), then computed whole and released; returns the
// tokens its slot kept.
int64_t serve(LlamaCellsPool& pool, const std::vector<int32_t>& prompt) {
  const TokenView v = view_of(prompt);
  PrefixHit hit = pool.lookup_prefix(v);
  const int64_t cached = hit.cached_tokens;
  const AdmitPlan plan = pool.plan_admit(std::move(hit), v.size() - cached);
  EXPECT_TRUE(plan.fits);
  const SeqSlot s = pool.apply_admit(plan);
  pool.commit(s, v, v.size());
  pool.release(s);
  return cached;
}

TEST(LlamaPromptCache, SavesLoadsAndEvictsAsTheServer) {
  LlamaPromptCache c(/*limit_bytes=*/100 * 512, /*limit_tokens=*/0, 512);
  EXPECT_TRUE(c.save(run_of(0, 40)));
  EXPECT_FALSE(c.save(run_of(0, 30)));  // held whole by the entry of 40: skipped
  EXPECT_TRUE(c.save(run_of(0, 50)));   // holds the entry of 40 whole: it goes
  ASSERT_EQ(c.entries(), 1u);
  EXPECT_EQ(c.entry(0).size(), 50u);
  // The entry beats a slot holding nothing of the prompt; it must keep a
  // quarter of itself (f_keep >= 0.25).
  const std::vector<int32_t> prompt = cat(run_of(0, 20), run_of(1000, 10));
  EXPECT_FALSE(c.best(run_of(500, 10), cat(run_of(0, 10), run_of(1000, 10))).has_value());
  EXPECT_EQ(c.best(run_of(500, 10), prompt), 0u);
  // A slot sharing more of the prompt than the entry wins itself.
  EXPECT_FALSE(c.best(run_of(0, 25), prompt).has_value());
  // 100 cells of room: a second entry of 60 drops the oldest, one stays.
  EXPECT_TRUE(c.save(run_of(2000, 60)));
  c.update();
  ASSERT_EQ(c.entries(), 1u);
  EXPECT_EQ(c.entry(0).front(), 2000);
  EXPECT_TRUE(c.save(run_of(3000, 200)));
  c.update();
  EXPECT_EQ(c.entries(), 1u);  // over the limit alone: kept
  EXPECT_EQ(c.bytes(), 200 * 512);
}

// An idle slot keeps its cells; the next prompt sharing a prefix with it
// (past slot_prompt_similarity) goes to it and computes only the rest.
TEST(LlamaServer, ASlotKeepsItsPromptForTheNextOneByPromptSimilarity) {
  LlamaCellsPool pool(params(1024, 2, true, 0));
  const std::vector<int32_t> a = run_of(0, 100), b = run_of(5000, 60);
  EXPECT_EQ(serve(pool, a), 0);
  EXPECT_EQ(serve(pool, b), 0);
  // Both idle slots keep their cells: 160 used.
  EXPECT_EQ(pool.used_cells(), 160);
  // a + 20: its first 100 tokens are slot 1's (LRU took the last slot
  // first, as llama-server's `<=` does).
  EXPECT_EQ(pool.slot_tokens(1).size(), 100u);
  EXPECT_EQ(serve(pool, cat(a, run_of(9000, 20))), 100);
  EXPECT_EQ(pool.server_counters().slots_by_similarity, 1);
  EXPECT_EQ(pool.server_counters().prompt_reused_tokens, 100);
  // The whole prompt cached: its last token is computed all the same.
  EXPECT_EQ(serve(pool, b), 59);
  // cache_prompt off: the slot is chosen the same way, nothing is kept.
  LlamaCellsPoolParams off = params(1024, 2, true, 0);
  off.cache_prompt = false;
  LlamaCellsPool none(off);
  EXPECT_EQ(serve(none, a), 0);
  EXPECT_EQ(serve(none, cat(a, run_of(9000, 20))), 0);
  EXPECT_NO_THROW(pool.check_drained());
}

// A request naming its slot (llama-server's id_slot: get_slot_by_id) takes
// that slot whatever the similarity says, keeps only what that slot shares
// with it, and waits while the slot is processing; without a name the
// slot with the longest common prefix is picked.
TEST(LlamaServer, ARequestNamingItsSlotGoesThereAndWaitsForIt) {
  LlamaCellsPool pool(params(1024, 2, true, 0));
  const std::vector<int32_t> a = run_of(0, 100), b = run_of(5000, 60);
  EXPECT_EQ(serve(pool, a), 0);  // slot 1 (LRU, the last of equals)
  EXPECT_EQ(serve(pool, b), 0);  // slot 0
  ASSERT_EQ(pool.slot_tokens(1).size(), 100u);
  ASSERT_EQ(pool.slot_tokens(0).size(), 60u);
  const std::vector<int32_t> next = cat(a, run_of(9000, 20));
  // Named slot 0 (holding b): nothing of a + 20 is there, so nothing is kept,
  // though slot 1 holds its first 100 tokens.
  TokenView named = view_of(next);
  named.id_slot = 0;
  PrefixHit hit = pool.lookup_prefix(named);
  EXPECT_EQ(hit.cached_tokens, 0);
  AdmitPlan plan = pool.plan_admit(std::move(hit), 120);
  ASSERT_TRUE(plan.fits);
  const SeqSlot s = pool.apply_admit(plan);
  EXPECT_EQ(s, 0);
  EXPECT_EQ(pool.server_counters().slots_by_id, 1);
  EXPECT_EQ(pool.server_counters().slots_by_similarity, 0);
  // Slot 0 is processing: another request naming it is not admitted now
  // (llama-server defers the task) ...
  TokenView again = view_of(b);
  again.id_slot = 0;
  EXPECT_FALSE(pool.plan_admit(pool.lookup_prefix(again), 60).fits);
  pool.commit(s, named, named.size());
  pool.release(s);
  // ... and once it is released it is, keeping what slot 0 now shares with b
  // (nothing: it holds a + 20).
  PrefixHit later = pool.lookup_prefix(again);
  EXPECT_EQ(later.cached_tokens, 0);
  EXPECT_TRUE(pool.plan_admit(std::move(later), 60).fits);
  // Unnamed, a + 20 again goes to the slot sharing its prefix, slot 0 now.
  EXPECT_EQ(serve(pool, next), 119);
  EXPECT_EQ(pool.server_counters().slots_by_similarity, 1);
  // A slot that does not exist is an error, not another slot.
  TokenView bad = view_of(next);
  bad.id_slot = 2;
  EXPECT_THROW((void)pool.lookup_prefix(bad), std::invalid_argument);
  EXPECT_NO_THROW(pool.check_drained());
}

// A slot handed to an unrelated prompt saves its tokens in the host prompt
// cache; a later prompt extending them restores them into a slot and
// computes only the tokens after them, the restore and the saves priced
// over the host link (swap bytes of the pass ahead of the step).
TEST(LlamaServer, ARestoredSlotSkipsExactlyTheRestoredTokensPrefill) {
  for (const bool with_cache : {true, false}) {
    LlamaCellsPool pool(params(1024, 1, true, with_cache ? Bytes{1} << 20 : 0));
    const Bytes cell = params(1024, 1, true, 0).sizing.cell_bytes();
    const std::vector<int32_t> a = run_of(0, 300), b = run_of(5000, 200);
    serve(pool, a);
    StepWork pass;
    EXPECT_FALSE(pool.take_pending_work(pass));
    serve(pool, b);  // LRU: the slot of `a`, saved first
    pass = {};
    ASSERT_EQ(pool.take_pending_work(pass), with_cache);
    EXPECT_EQ(pass.swap_out_bytes, with_cache ? 300 * cell : 0);
    // a + 109 new tokens, through the scheduler: the slot holds b (no
    // prefix of it), b is saved, a restored.
    const std::vector<int32_t> prompt = cat(a, run_of(9000, 109));
    Sequence seq;
    seq.request.prompt = prompt;
    seq.request.output = run_of(7, 4);
    seq.prompt_tokens = seq.prompt_len();
    seq.output_tokens = seq.output_len();
    Scheduler sched(SchedulerParams{}, pool);
    sched.add_waiting(&seq);
    ScheduledBatch batch;
    sched.schedule(batch);
    ASSERT_EQ(batch.items.size(), 1u);
    const int64_t restored = with_cache ? 300 : 0;
    EXPECT_EQ(seq.computed, restored);
    EXPECT_EQ(batch.items[0].tokens, 409 - restored);  // the prefill left
    EXPECT_EQ(pool.block_table(seq.slot).size(), 409u);
    pass = {};
    ASSERT_EQ(pool.take_pending_work(pass), with_cache);
    EXPECT_EQ(pass.swap_in_bytes, restored * cell);
    EXPECT_EQ(pass.swap_out_bytes, with_cache ? 200 * cell : 0);
    EXPECT_EQ(pool.server_counters().cache_restored_tokens, restored);
    EXPECT_EQ(pool.accounting().prefix_hit_tokens, restored);
    if (with_cache) {
      ASSERT_NE(pool.prompt_cache(), nullptr);
      EXPECT_EQ(pool.prompt_cache()->entries(), 1u);  // b's; a's left it
      EXPECT_EQ(pool.prompt_cache()->entry(0).front(), 5000);
    }
  }
}

// One unified cache: every slot's context is the whole cache and an idle
// slot's cells are purged when a running one needs them. A stream per
// slot: each slot has kv_size / n_parallel cells of its own.
TEST(LlamaServer, UnifiedSlotsShareOneCacheStreamsSplitIt) {
  LlamaCellsPool unified(params(1024, 4, true, 0));
  LlamaCellsPool streams(params(1024, 4, false, 0));
  EXPECT_EQ(unified.slot_context(), 1024);
  EXPECT_EQ(unified.streams(), 1);
  EXPECT_EQ(streams.slot_context(), 256);
  EXPECT_EQ(streams.streams(), 4);
  // 600 tokens in one slot: the unified cache takes them, a stream never.
  EXPECT_EQ(unified.context_limited_output(500, 100), 100);
  EXPECT_EQ(streams.context_limited_output(500, 100), 0);
  EXPECT_EQ(streams.counters().requests_refused, 1);
  // Three idle slots of 300 cells in the unified cache: a fourth prompt of
  // 700 purges two of them (in slot order), not the third.
  for (int i = 0; i < 3; ++i) serve(unified, run_of(10000 * (i + 1), 300));
  EXPECT_EQ(unified.used_cells(), 900);
  serve(unified, run_of(90000, 700));
  EXPECT_EQ(unified.server_counters().idle_slots_purged, 2);
  EXPECT_EQ(unified.used_cells(), 1000);
  // Streams: each slot's cells in its own stream; attention spans the
  // widest stream's cells (256 padded), not the sum.
  for (int i = 0; i < 4; ++i) serve(streams, run_of(10000 * (i + 1), 200));
  for (int s = 0; s < 4; ++s) EXPECT_EQ(streams.cells(s).used(), 200u);
  EXPECT_EQ(streams.attention_context(1) * params(1024, 4, false, 0).sizing.cell_bytes(),
            256 * params(1024, 4, false, 0).sizing.cell_bytes());
  EXPECT_NO_THROW(unified.check_drained());
  EXPECT_NO_THROW(streams.check_drained());
}

// Four requests running at once with the same 100-token system prompt:
// llama-server gives each its own slot and computes the prefix in each
// (update_slots reuses a prefix only within a slot; cells are shared
// between sequences only by seq_cp, which it makes for the children of
// one prompt's parallel completions: the next test). So the unified
// cache holds the prefix four times, as the streams do.
TEST(LlamaServer, RunningSlotsEachHoldTheirOwnCopyOfASharedPrefix) {
  for (const bool unified : {true, false}) {
    LlamaCellsPool pool(params(1024, 4, unified, 0));
    const std::vector<int32_t> system = run_of(0, 100);
    std::vector<SeqSlot> running;
    for (int i = 0; i < 4; ++i) {
      const std::vector<int32_t> prompt = cat(system, run_of(1000 * (i + 1), 50));
      const TokenView v = view_of(prompt);
      PrefixHit hit = pool.lookup_prefix(v);
      EXPECT_EQ(hit.cached_tokens, 0);
      const AdmitPlan plan = pool.plan_admit(std::move(hit), 150);
      ASSERT_TRUE(plan.fits);
      running.push_back(pool.apply_admit(plan));
      pool.commit(running.back(), v, 150);
    }
    EXPECT_EQ(pool.used_cells(), 4 * 150) << unified;
    for (int64_t s = 0; s < pool.streams(); ++s)
      for (uint32_t c = 0; c < pool.cells(s).size(); ++c)
        EXPECT_LE(__builtin_popcountll(pool.cells(s).cell(c).seqs), 1) << "a shared cell";
    for (SeqSlot s : running) pool.release(s);
    EXPECT_NO_THROW(pool.check_drained());
  }
}

// One prompt, four completions (n_cmpl = 4: a parent task and three
// children, tools/server/server-context.cpp fb402660): the children wait
// while the parent computes the prompt, then copy_state_to gives each the
// parent's state. Unified, seq_cp adds the child's id to the parent's
// cells (src/llama-kv-cache.cpp 3514e9f6): the 150 prompt cells are held
// once, by four sequence ids, and each slot's 20-token reply in cells of
// its own. With streams, seq_cp copies the parent's stream buffer into the
// child's whole: the prompt is held four times, each copy a stream's bytes.
TEST(LlamaServer, AUnifiedCacheHoldsTheCompletionsSharedPromptOnce) {
  const std::vector<int32_t> prompt = cat(run_of(0, 100), run_of(1000, 50));
  for (const bool unified : {true, false}) {
    const LlamaCellsPoolParams pp = params(1024, 4, unified, 0);
    LlamaCellsPool pool(pp);
    const TokenView v = view_of(prompt);
    PrefixHit hit = pool.lookup_prefix(v);
    const AdmitPlan plan = pool.plan_admit(std::move(hit), 150);
    ASSERT_TRUE(plan.fits);
    const SeqSlot parent = pool.apply_admit(plan);
    std::vector<SeqSlot> slots{parent};
    for (int i = 0; i < 3; ++i) {
      slots.push_back(pool.admit_child(v));
      ASSERT_NE(slots.back(), kNoSeq);
    }
    EXPECT_EQ(pool.admit_child(v), kNoSeq);  // every slot runs
    pool.commit(parent, v, 150);
    EXPECT_EQ(pool.used_cells(), 150);  // the children wait, holding nothing
    for (size_t i = 1; i < slots.size(); ++i) pool.copy_state(parent, slots[i]);
    EXPECT_EQ(pool.used_cells(), unified ? 150 : 4 * 150) << unified;
    for (SeqSlot s : slots) {
      const std::vector<int32_t> seen = cat(prompt, run_of(5000 + 100 * s, 20));
      const GrowPlan g = pool.plan_grow(s, 20);
      ASSERT_TRUE(g.fits);
      pool.apply_grow(s, g, 20);
      pool.commit(s, view_of(seen), 170);
      EXPECT_EQ(pool.block_table(s).size(), 170u);
      EXPECT_EQ(pool.slot_tokens(s), seen);
    }
    const int64_t held = unified ? 150 + 4 * 20 : 4 * 170;
    EXPECT_EQ(pool.used_cells(), held) << unified;
    EXPECT_EQ(pool.running_cells(), held);
    EXPECT_EQ(pool.free_blocks(), 1024 - held);
    int64_t by_four = 0, by_one = 0;
    for (int64_t st = 0; st < pool.streams(); ++st)
      for (uint32_t c = 0; c < pool.cells(st).size(); ++c) {
        const int n = __builtin_popcountll(pool.cells(st).cell(c).seqs);
        by_four += n == 4;
        by_one += n == 1;
      }
    EXPECT_EQ(by_four, unified ? 150 : 0);
    EXPECT_EQ(by_one, unified ? 4 * 20 : 4 * 170);
    if (unified) {
      for (SeqSlot s : slots) {
        EXPECT_TRUE(std::equal(pool.block_table(s).begin(), pool.block_table(s).begin() + 150,
                               pool.block_table(parent).begin()));
      }
    }
    const LlamaServerCounters& k = pool.server_counters();
    EXPECT_EQ(k.state_copies, 3);
    EXPECT_EQ(k.cells_shared, unified ? 3 * 150 : 0);
    const Bytes stream_copy = unified ? 0 : 3 * 256 * pp.sizing.cell_bytes();
    EXPECT_EQ(k.stream_copy_bytes, stream_copy);
    StepWork pass;
    EXPECT_EQ(pool.take_pending_work(pass), !unified);
    EXPECT_EQ(pass.kv_copy_bytes, stream_copy);
    for (SeqSlot s : slots) pool.release(s);
    EXPECT_EQ(pool.used_cells(), held);  // idle slots keep their cells
    EXPECT_NO_THROW(pool.check_drained());
  }
}

// A shared cell goes only when its last sequence lets it go: the unified
// cache's purge of idle slots frees the cells a running parent shares with
// them only once nothing running holds them.
TEST(LlamaServer, APurgedChildLeavesTheCellsItSharesWithARunningSlot) {
  LlamaCellsPool pool(params(256, 2, true, 0));
  const std::vector<int32_t> prompt = run_of(0, 100);
  const TokenView v = view_of(prompt);
  PrefixHit hit = pool.lookup_prefix(v);
  const SeqSlot parent = pool.apply_admit(pool.plan_admit(std::move(hit), 100));
  const SeqSlot child = pool.admit_child(v);
  pool.commit(parent, v, 100);
  pool.copy_state(parent, child);
  pool.release(child);
  // 156 cells free; the idle child's are all shared with the parent, so a
  // grow of 157 does not fit, and one of 156 purges nothing the parent holds.
  EXPECT_FALSE(pool.plan_grow(parent, 157).fits);
  const GrowPlan g = pool.plan_grow(parent, 156);
  ASSERT_TRUE(g.fits);
  pool.apply_grow(parent, g, 156);
  EXPECT_EQ(pool.used_cells(), 256);
  EXPECT_EQ(pool.block_table(parent).size(), 256u);
}

// llama-server with context shift off: a prompt of n_ctx tokens or more
// is refused ("exceeds the available context size"); a reply stops where
// the slot's context is full (process_token: n_ctx - prompt tokens).
TEST(LlamaServer, ContextShiftOffRefusesOrTruncatesAsTheServer) {
  LlamaCellsPool pool(params(1024, 4, false, 0));  // 256 cells a slot
  EXPECT_EQ(pool.context_limited_output(256, 10), 0);
  EXPECT_EQ(pool.context_limited_output(300, 10), 0);
  EXPECT_EQ(pool.context_limited_output(255, 10), 1);
  EXPECT_EQ(pool.context_limited_output(250, 10), 6);
  EXPECT_EQ(pool.context_limited_output(200, 56), 56);  // exactly fits
  EXPECT_EQ(pool.counters().requests_refused, 2);
  EXPECT_EQ(pool.counters().replies_truncated, 2);
  // Context shift on: the pool shifts nothing, so what would need a shift
  // is refused (a prompt of n_ctx or more is refused either way).
  LlamaCellsPoolParams on = params(1024, 4, false, 0);
  on.context_shift = true;
  LlamaCellsPool shifting(on);
  EXPECT_EQ(shifting.context_limited_output(250, 10), 0);
  EXPECT_EQ(shifting.context_limited_output(200, 56), 56);
}

// The same through the serving engine: 200-token prompts with 100-token
// replies in slots of 256 cells are cut to 56 tokens; 300-token prompts
// are refused; nothing is left running.
TEST(LlamaServer, TheServingEngineRefusesAndTruncatesAtTheSlotsContext) {
  const auto run = [](int64_t input, const std::string& shift) {
    const std::string text =
        "name: srv\nseed: 3\ndevice: ascend-910b2\nmodel: llama-3.2-1b\n"
        "kv_cache: {policy: llama_cells, ctx_size: 1024, n_parallel: 4, kv_unified: false, "
        "behaviour: current, context_shift: " +
        shift +
        "}\n"
        "workload:\n  kind: synthetic\n  requests: 6\n  arrival: {process: poisson, rate_per_s: "
        "4}\n"
        "  input_tokens: {dist: constant, value: " +
        std::to_string(input) + "}\n  output_tokens: {dist: constant, value: 100}\n";
    const ScenarioSpec s = testing::scenario_from_text(text);
    return ServingEngine(s, nullptr).run();
  };
  const RunMetrics cut = run(200, "off");
  EXPECT_EQ(cut.requests.completed, 6);
  EXPECT_EQ(cut.requests.rejected, 0);
  const LlamaCellsMetrics& c = testing::cells_of(cut);
  EXPECT_EQ(c.replies_truncated, 6);
  EXPECT_EQ(c.slot_context, 256);
  EXPECT_FALSE(c.context_shift);
  const RunMetrics refused = run(300, "off");
  EXPECT_EQ(refused.requests.rejected, 6);
  EXPECT_EQ(testing::cells_of(refused).requests_refused, 6);
  const RunMetrics shifted = run(200, "on");  // a shift the pool does not make
  EXPECT_EQ(shifted.requests.rejected, 6);
}

// Streams of ctx_size / n_parallel cells, rounded down (llama.cpp's
// n_ctx_seq): 1000 cells in 3 slots are 3 streams of 333, 999 in all.
TEST(LlamaServer, AStreamPerSlotRoundsTheCacheDownToWholeStreams) {
  const ScenarioSpec s = testing::scenario_from_text(
      "name: s3\nseed: 2\ndevice: ascend-910b2\nmodel: llama-3.2-1b\n"
      "kv_cache: {policy: llama_cells, ctx_size: 1000, n_parallel: 3, kv_unified: false}\n"
      "workload:\n  kind: synthetic\n  requests: 5\n  arrival: {process: poisson, rate_per_s: 9}\n"
      "  input_tokens: {dist: constant, value: 200}\n  output_tokens: {dist: constant, value: "
      "20}\n");
  const RunMetrics m = ServingEngine(s, nullptr).run();
  EXPECT_EQ(m.kv_cache.capacity_tokens, 999);
  EXPECT_EQ(testing::cells_of(m).slot_context, 333);
  EXPECT_EQ(m.requests.completed, 5);
}

// A cluster of llama-servers: the router sends each instance its requests
// like any other; every slot's kept cells count free at the end.
TEST(LlamaServer, ARouterServesTwoLlamaServersLikeAnyInstance) {
  const ScenarioSpec s = testing::scenario_from_text(
      "name: two\nseed: 4\ndevice: ascend-910b2\nmodel: llama-3.2-1b\n"
      "kv_cache: {policy: llama_cells, ctx_size: 8192, behaviour: current}\n"
      "workload:\n  kind: chat\n  sessions: 12\n  arrival: {process: poisson, rate_per_s: 4}\n"
      "  turns: {dist: constant, value: 3}\n  system_prompt_tokens: 128\n"
      "  user_tokens: {dist: constant, value: 64}\n  output_tokens: {dist: constant, value: 16}\n"
      "  think_time: {dist: constant, value: 1s}\n"
      "cluster:\n  router: {policy: session_affinity}\n  groups: {a: {count: 2}}\n");
  const ScenarioRunResult r = run_scenario(s, nullptr);  // pools conserved, or it throws
  EXPECT_EQ(r.metrics.requests.completed, 36);
  EXPECT_EQ(r.metrics.requests.rejected, 0);
  // Each session's later turns find their slot's (or the host cache's) tokens.
  EXPECT_GT(testing::pool_of(r.metrics).prefix_hit_rate, 0.5);
}

}  // namespace
}  // namespace kvsim::KVSIM_TEST_FILE_SCOPE
