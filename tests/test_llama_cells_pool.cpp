// llama_cells under the serving engine (sim/cache/llama_cells_pool.hpp):
// many sequences in one unified cell cache, as llama-server's slots share
// it. After every admission, growth and release the cells are conserved:
// each used cell belongs to exactly one sequence at the position its table
// gives it, and the free count is the rest.
#include <gtest/gtest.h>

#include <map>
#include <random>
#include <vector>

#include "sim/cache/llama_cells_pool.hpp"
#include "sim/core/metrics.hpp"
#include "tests/support/metric_parts.hpp"

namespace kvsim::KVSIM_TEST_FILE_SCOPE {
namespace {

LlamaCellsPoolParams params(int64_t cells, double defrag_thold) {
  ModelSpec m;
  m.num_hidden_layers = 2;
  m.num_key_value_heads = 2;
  m.head_dim = 32;
  LlamaCellsPoolParams p;
  p.sizing = llama_kv_sizing(m, cells, kernels::GgmlType::f16, kernels::GgmlType::f16);
  p.defrag_thold = defrag_thold;
  p.n_parallel = 4;
  return p;
}

// Every cell a table names is used, by that sequence, at the table's
// position; the used count is the tables' sizes together.
void expect_conserved(const LlamaCellsPool& pool, const std::map<SeqSlot, int64_t>& held) {
  int64_t total = 0;
  for (const auto& [seq, tokens] : held) {
    const std::vector<BlockId>& table = pool.block_table(seq);
    ASSERT_EQ(static_cast<int64_t>(table.size()), tokens) << "seq " << seq;
    for (size_t i = 0; i < table.size(); ++i) {
      const LlamaKvCell& c = pool.cells().cell(static_cast<uint32_t>(table[i]));
      EXPECT_TRUE(c.has(seq)) << "seq " << seq << " cell " << table[i];
      EXPECT_EQ(c.seqs, uint64_t{1} << seq) << "a cell of two sequences";
      EXPECT_EQ(c.pos, static_cast<int64_t>(i));
    }
    total += tokens;
  }
  EXPECT_EQ(static_cast<int64_t>(pool.cells().used()), total);
  EXPECT_EQ(pool.free_blocks(), static_cast<int64_t>(pool.cells().size()) - total);
}

TEST(LlamaCellsPool, CellsAreConservedThroughAdmitsGrowthAndReleases) {
  for (const double thold : {-1.0, 0.1}) {
    LlamaCellsPool pool(params(512, thold));
    std::mt19937 rng(7);
    std::map<SeqSlot, int64_t> held;
    for (int step = 0; step < 400; ++step) {
      const int action = static_cast<int>(rng() % 3);
      if (action == 0 && held.size() < 4) {
        const int64_t n = 1 + static_cast<int64_t>(rng() % 60);
        const AdmitPlan plan = pool.plan_admit(PrefixHit{}, n);
        if (!plan.fits) continue;
        held[pool.apply_admit(plan)] = n;
      } else if (action == 1 && !held.empty()) {
        auto it = std::next(held.begin(), static_cast<long>(rng() % held.size()));
        const int64_t n = 1 + static_cast<int64_t>(rng() % 8);
        const GrowPlan g = pool.plan_grow(it->first, n);
        if (!g.fits) continue;
        pool.apply_grow(it->first, g, n);
        it->second += n;
      } else if (!held.empty()) {
        auto it = std::next(held.begin(), static_cast<long>(rng() % held.size()));
        pool.release(it->first);
        held.erase(it);
      }
      expect_conserved(pool, held);
      if (::testing::Test::HasFailure()) return;
    }
    for (const auto& [seq, tokens] : held) pool.release(seq);
    EXPECT_NO_THROW(pool.check_drained());
    RunMetrics m;
    pool.report(m);
    EXPECT_EQ(testing::cells_of(m).kv_size, 512);
    if (thold < 0) {
      EXPECT_EQ(testing::cells_of(m).defrags, 0);
    }
  }
}

TEST(LlamaCellsPool, ARunOfHolesIsDefragmentedAndPricedAsACopy) {
  LlamaCellsPool pool(params(256, 0.1));
  std::vector<SeqSlot> seqs;
  for (int i = 0; i < 4; ++i) seqs.push_back(pool.apply_admit(pool.plan_admit(PrefixHit{}, 40)));
  // Releasing the first two leaves 80 holes below cell 160: 1 - 80/160 > 0.1.
  pool.release(seqs[0]);
  pool.release(seqs[1]);
  std::map<SeqSlot, int64_t> held = {{seqs[2], 40}, {seqs[3], 40}};
  expect_conserved(pool, held);
  EXPECT_GT(pool.counters().defrags, 0);
  // The cells of the last sequences moved into the holes: a compact run.
  EXPECT_EQ(pool.cells().cell_max(), 80u);
  StepWork pass;
  EXPECT_TRUE(pool.take_pending_work(pass));
  EXPECT_EQ(pass.kv_copy_bytes,
            pool.counters().defrag_moves * params(256, 0.1).sizing.cell_bytes());
  EXPECT_FALSE(pool.take_pending_work(pass));
}

TEST(LlamaCellsPool, EveryTokenAttendsOverTheUnifiedView) {
  LlamaCellsPool pool(params(1024, -1));
  const SeqSlot a = pool.apply_admit(pool.plan_admit(PrefixHit{}, 100));
  const SeqSlot b = pool.apply_admit(pool.plan_admit(PrefixHit{}, 200));
  (void)a;
  (void)b;
  // n = cell_max (300) padded to 32: both sequences read 320 cells, their
  // own context whatever it is (llama.cpp masks the other sequence's cells).
  EXPECT_EQ(pool.attention_context(5), 320);
  EXPECT_EQ(pool.attention_context(250), 320);
  EXPECT_TRUE(pool.caps_attention_context());
}

TEST(LlamaCellsPool, NoSwapAndAtMostItsSequenceIds) {
  LlamaCellsPool pool(params(256, -1));
  for (int i = 0; i < 4; ++i) ASSERT_TRUE(pool.plan_admit(PrefixHit{}, 8).fits);
  std::vector<SeqSlot> seqs;
  for (int i = 0; i < 4; ++i) seqs.push_back(pool.apply_admit(pool.plan_admit(PrefixHit{}, 8)));
  EXPECT_FALSE(pool.plan_admit(PrefixHit{}, 8).fits);  // four ids, four sequences
  EXPECT_FALSE(pool.plan_swap_out(seqs[0]).fits);
  for (SeqSlot s : seqs) pool.release(s);
  EXPECT_NO_THROW(pool.check_drained());
}

}  // namespace
}  // namespace kvsim::KVSIM_TEST_FILE_SCOPE
