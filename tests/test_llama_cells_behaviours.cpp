// llama_cells' two llama.cpp behaviours (sim/cache/llama_kv_cells.hpp,
// docs/llama-cells.md): seed_2024 (seed 004: contiguous slots first,
// defragmentation, context shift on) and current (find_slot with
// cont = false scatters a micro-batch into free cells, no defragmentation,
// n padded to 256, context shift off as llama-server). And the K-shift as
// llama.cpp's build_graph_shift runs it: every cell's key of every layer.
#include <gtest/gtest.h>

#include <map>
#include <string>
#include <vector>

#include "scenario_helpers.hpp"
#include "sim/cache/llama_cells_policy.hpp"
#include "sim/cache/llama_cells_pool.hpp"
#include "sim/cache/llama_kv_cells.hpp"
#include "sim/genie/genie_engine.hpp"
#include "tests/support/metric_parts.hpp"

namespace kvsim::KVSIM_TEST_FILE_SCOPE {
namespace {

// Cells 0..29 for three sequences of 10; the middle one released leaves a
// hole of 10 cells (10..19), where searching starts next.
LlamaKvCells with_a_hole() {
  LlamaKvCells c(64);
  for (LlamaSeqId s = 0; s < 3; ++s) {
    const LlamaSlotPlan p = c.find_slot(10);
    const std::vector<int64_t> pos = {0, 1, 2, 3, 4, 5, 6, 7, 8, 9};
    c.apply_slot(p, pos, uint64_t{1} << s);
  }
  c.seq_rm(1, -1, -1);
  return c;
}

TEST(LlamaBehaviours, NamesParseAndUnknownOnesDoNot) {
  EXPECT_EQ(parse_llama_behaviour("seed_2024"), LlamaBehaviour::seed_2024);
  EXPECT_EQ(parse_llama_behaviour("current"), LlamaBehaviour::current);
  EXPECT_FALSE(parse_llama_behaviour("b9999").has_value());
  EXPECT_EQ(llama_behaviour_names(), (std::vector<std::string>{"seed_2024", "current"}));
  EXPECT_EQ(llama_behaviour_name(LlamaBehaviour::current), "current");
}

TEST(LlamaBehaviours, CurrentScattersABatchIntoTheHolesSeed2024SkipsThem) {
  const LlamaKvCells c = with_a_hole();
  ASSERT_EQ(c.head(), 10u);
  // seed 004: no run of 15 in the hole, so the first run after it.
  const LlamaSlotPlan run = c.find_slot(15, true);
  ASSERT_TRUE(run.fits);
  EXPECT_TRUE(run.contiguous);
  EXPECT_EQ(run.cells.front(), 30u);
  EXPECT_EQ(run.cells.back(), 44u);
  // current: the hole's 10 cells first, then the next 5 free ones.
  const LlamaSlotPlan scattered = c.find_slot(15, false);
  ASSERT_TRUE(scattered.fits);
  EXPECT_FALSE(scattered.contiguous);
  std::vector<uint32_t> want;
  for (uint32_t i = 10; i < 20; ++i) want.push_back(i);
  for (uint32_t i = 30; i < 35; ++i) want.push_back(i);
  EXPECT_EQ(scattered.cells, want);
  // A batch that fits the hole is one run either way.
  EXPECT_TRUE(c.find_slot(8, false).contiguous);
  EXPECT_FALSE(c.find_slot(55, false).fits);  // 44 cells free
}

LlamaCellsPoolParams pool_params(LlamaBehaviour b, double defrag_thold) {
  ModelSpec m;
  m.num_hidden_layers = 2;
  m.num_key_value_heads = 2;
  m.head_dim = 32;
  LlamaCellsPoolParams p;
  p.sizing = llama_kv_sizing(m, 256, kernels::GgmlType::f16, kernels::GgmlType::f16);
  p.behaviour = b;
  p.defrag_thold = defrag_thold;
  p.n_parallel = 4;
  return p;
}

// Three sequences of 40; the first two released leave 80 holes below 120.
// seed_2024 defragments them away; current keeps them and the next
// admission of 100 tokens fills the 80 holes and 20 cells past the last.
TEST(LlamaBehaviours, CurrentNeverDefragmentsAndFillsHolesByScattering) {
  for (LlamaBehaviour b : {LlamaBehaviour::seed_2024, LlamaBehaviour::current}) {
    LlamaCellsPool pool(pool_params(b, 0.0));
    std::vector<SeqSlot> seqs;
    for (int i = 0; i < 3; ++i) seqs.push_back(pool.apply_admit(pool.plan_admit(PrefixHit{}, 40)));
    pool.release(seqs[0]);
    pool.release(seqs[1]);
    const SeqSlot next = pool.apply_admit(pool.plan_admit(PrefixHit{}, 100));
    const std::vector<BlockId>& table = pool.block_table(next);
    ASSERT_EQ(table.size(), 100u);
    StepWork pass;
    if (b == LlamaBehaviour::seed_2024) {
      EXPECT_GT(pool.counters().defrags, 0);
      EXPECT_TRUE(pool.take_pending_work(pass));
      EXPECT_EQ(table.front(), 40);  // after the 40 moved cells: one run
      EXPECT_EQ(pool.counters().slots_scattered, 0);
      continue;
    }
    EXPECT_EQ(pool.counters().defrags, 0);
    EXPECT_EQ(pool.counters().defrag_bytes, 0);
    EXPECT_FALSE(pool.take_pending_work(pass));
    for (int i = 0; i < 80; ++i) EXPECT_EQ(table[static_cast<size_t>(i)], i);
    for (int i = 80; i < 100; ++i) EXPECT_EQ(table[static_cast<size_t>(i)], 40 + i);
    EXPECT_EQ(pool.counters().slots_scattered, 1);
    EXPECT_EQ(pool.cells().cell_max(), 140u);
    // n padded to 256 cells, as current llama.cpp's get_n_kv.
    EXPECT_EQ(pool.attention_context(1) * pool_params(b, 0).sizing.cell_bytes(),
              256 * pool_params(b, 0).sizing.cell_bytes());
  }
}

GenieCacheShape shape(const std::string& behaviour, const std::string& context_shift = "auto") {
  GenieCacheShape s;
  s.layers = 2;
  s.kv_heads = 2;
  s.head_dim = 32;  // a K cell of 64 f16 values: 128 B per layer
  s.dtype_bytes = 2;
  s.ctx_size = 256;
  s.ar_variants = {1, 32};
  s.llama.behaviour = behaviour;
  s.llama.context_shift = context_shift;
  s.llama.defrag_thold = 0.0;
  return s;
}

KvUpdatePlan dispatch(GenieKvPolicy& p, int64_t n_past, int64_t variant) {
  const KvUpdatePlan plan = p.plan_update({n_past, variant});
  p.apply_update(plan);
  return plan;
}

// llama_kv_cache::build_graph_shift ropes a view of all get_size() cells of
// each layer's K (the unshifted ones by 0): the bytes are every cell's key
// of every layer, read and written, however many cells were shifted.
TEST(LlamaBehaviours, KShiftBytesAreEveryCellsKeyBytesPerLayer) {
  for (const char* b : {"seed_2024", "current"}) {
    for (int64_t n_discard : {128, 8}) {
      GenieCacheShape s = shape(b, "on");
      s.llama.n_discard = n_discard;
      auto p = make_llama_cells_policy(s);
      const auto& view = dynamic_cast<const LlamaCellsView&>(*p);
      for (int64_t n = 32; n <= 256; n += 32) dispatch(*p, n, 32);
      const KvUpdatePlan shift = dispatch(*p, 288, 32);
      // 128 discarded at once, or four shifts of 8 to make room for 32: one
      // K-shift pass either way (has_shift is applied once per update).
      ASSERT_EQ(shift.evicted_tokens, n_discard == 128 ? 128 : 32) << b;
      EXPECT_EQ(view.counters().kshift_passes, 1);
      const LlamaKvSizing& z = view.sizing();
      EXPECT_EQ(shift.shifted_cells, 256) << b;
      EXPECT_EQ(shift.kshift_bytes, 2 * z.n_layer * z.k_l_bytes()) << b;
      EXPECT_EQ(shift.kshift_bytes, 2 * 2 * 256 * 128) << b;
      EXPECT_EQ(view.counters().kshift_bytes, shift.kshift_bytes);
    }
  }
}

TEST(LlamaBehaviours, TheCurrentPolicyNeverDefragmentsAndPadsTo256) {
  for (const char* b : {"seed_2024", "current"}) {
    auto p = make_llama_cells_policy(shape(b, "on"));  // defrag_thold 0
    const auto& view = dynamic_cast<const LlamaCellsView&>(*p);
    dispatch(*p, 40, 32);
    EXPECT_EQ(view.attention_n(), std::string(b) == "current" ? 256u : 64u);
    for (int64_t n = 64; n <= 1024; n += 32) dispatch(*p, n, 32);
    EXPECT_GE(view.counters().context_shifts, 3);
    if (std::string(b) == "seed_2024") {
      EXPECT_GT(view.counters().defrags, 0);
    } else {
      EXPECT_EQ(view.counters().defrags, 0);
      EXPECT_EQ(view.counters().defrag_bytes, 0);
      EXPECT_FALSE(view.do_defrag());
    }
  }
}

// llama-server with context shift off (tools/server/server-context.cpp): a
// request of n_ctx tokens or more fails ("exceeds the available context
// size"); one that fits generates until the cache is full and stops there
// (truncated).
TEST(LlamaBehaviours, ContextShiftOffRefusesOrTruncatesAsTheServer) {
  auto p = make_llama_cells_policy(shape("current"));
  const auto& view = dynamic_cast<const LlamaCellsView&>(*p);
  EXPECT_FALSE(view.context_shift());
  EXPECT_FALSE(p->makes_room());
  EXPECT_EQ(p->overflow_reply_tokens(200, 56, 10), 0);  // 256 tokens: refused
  EXPECT_EQ(p->overflow_reply_tokens(300, 10, 10), 0);
  EXPECT_EQ(p->overflow_reply_tokens(200, 40, 30), 16);  // stops at 256
  EXPECT_EQ(view.counters().requests_refused, 2);
  EXPECT_EQ(view.counters().replies_truncated, 1);
  // The engine never asks for more: a batch past the cells is a logic error.
  dispatch(*p, 256, 32);
  EXPECT_THROW((void)p->plan_update({257, 1}), std::logic_error);
  // auto follows the behaviour; on / off override it.
  EXPECT_TRUE(make_llama_cells_policy(shape("seed_2024"))->makes_room());
  EXPECT_TRUE(make_llama_cells_policy(shape("current", "on"))->makes_room());
  EXPECT_FALSE(make_llama_cells_policy(shape("seed_2024", "off"))->makes_room());
  EXPECT_THROW(make_llama_cells_policy(shape("b9999")), std::invalid_argument);
}

// The long dialog of htp-llama-cells-long-dialog (about eight times n_ctx)
// under each behaviour: seed_2024 shifts and completes every turn; current
// keeps the history until the conversation reaches n_ctx, then refuses
// every later turn, as llama-server answers a chat client that resends it.
TEST(LlamaBehaviours, TheLongDialogShiftsUnderSeed2024AndIsRefusedUnderCurrent) {
  const auto run = [](const std::string& behaviour) {
    const std::string text =
        "name: cells-behaviour\nseed: 5\ndevice: snapdragon-8-elite\n"
        "model: llama-3.2-3b-instruct-w4a16\n"
        "kv_cache: {policy: llama_cells, behaviour: " +
        behaviour +
        ", n_keep: 64, dtype: fp16, ctx_size: 2048, ar_variants: [1, 128], update_threads: 4}\n"
        "workload:\n  kind: dialog\n  turns: 40\n"
        "  prompt_tokens: {dist: uniform, min: 150, max: 350}\n"
        "  reply_tokens: {dist: uniform, min: 60, max: 240}\n"
        "  think_time: {dist: exponential, mean: 15s}\n";
    return GenieEngine(testing::scenario_from_text(text), nullptr).run();
  };
  const RunMetrics seed = run("seed_2024");
  const RunMetrics cur = run("current");
  EXPECT_EQ(seed.requests.completed, 40);
  EXPECT_GE(testing::cells_of(seed).context_shifts, 10);
  const LlamaCellsMetrics& c = testing::cells_of(cur);
  EXPECT_EQ(c.behaviour, "current");
  EXPECT_FALSE(c.context_shift);
  EXPECT_EQ(c.context_shifts, 0);
  EXPECT_EQ(c.kshift_bytes, 0);
  EXPECT_EQ(c.defrags, 0);
  EXPECT_EQ(testing::genie_of(cur).context_resets, 0);  // the history is never dropped
  EXPECT_GT(c.requests_refused, 0);
  EXPECT_EQ(cur.requests.rejected, c.requests_refused);
  EXPECT_EQ(cur.requests.completed + cur.requests.rejected, 40);
  EXPECT_LT(cur.requests.completed, 12);  // ~2048 tokens at ~420 a turn
}

}  // namespace
}  // namespace kvsim::KVSIM_TEST_FILE_SCOPE
