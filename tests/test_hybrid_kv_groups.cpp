// A KV cache group per attention type (vLLM's hybrid allocator): the group
// layout of the shipped hybrid models, gemma-2-9b's KV at 8K against the
// formula, the pool's accounting on hand cases (window freeing, prefix hits
// that need the full group's whole prefix and the sliding group's last
// window, eviction, swap), and a hybrid model end to end with preemption.
#include <gtest/gtest.h>

#include <numeric>
#include <vector>

#include "models/model_spec.hpp"
#include "scenario_helpers.hpp"
#include "sim/cache/hybrid_paged_policy.hpp"
#include "sim/cache/kv_cache_groups.hpp"
#include "sim/cache/pool_sizing.hpp"
#include "sim/serve/engine.hpp"
#include "tests/support/metric_parts.hpp"

namespace kvsim::KVSIM_TEST_FILE_SCOPE {
namespace {
using testing::scenario_from_text;

ModelSpec shipped(const std::string& name) {
  config::LoadContext ctx;
  ModelSpec m = load_model_file(testing::configs_dir() + "/models/" + name + ".yaml", ctx);
  EXPECT_TRUE(ctx.diagnostics.empty()) << name;
  return m;
}

TEST(KvCacheGroups, ShippedModelsLayOutAsVllmDoes) {
  // gemma-2-9b: 21 sliding (4,096) + 21 full layers: one group of each.
  const KvCacheGroups g2 = kv_cache_groups(shipped("gemma-2-9b"));
  EXPECT_TRUE(g2.hybrid());
  EXPECT_EQ(g2.page_layers, 21);
  EXPECT_EQ(g2.full_groups, 1);
  EXPECT_EQ(g2.sliding_groups, 1);
  EXPECT_EQ(g2.window, 4096);
  // gemma-3-4b: 34 layers, every sixth full: 5 full, 29 sliding (1,024)
  // in ceil(29 / 5) = 6 groups of 5 (one layer's pages padded).
  const KvCacheGroups g3 = kv_cache_groups(shipped("gemma-3-4b"));
  EXPECT_EQ(g3.page_layers, 5);
  EXPECT_EQ(g3.sliding_groups, 6);
  EXPECT_EQ(g3.window, 1024);
  // Full attention only: no groups, the single pool as before.
  EXPECT_FALSE(kv_cache_groups(shipped("llama-3-8b")).hybrid());
  EXPECT_FALSE(kv_cache_groups(shipped("deepseek-v3")).hybrid());
}

// gemma-2-9b, bf16, 8,192 tokens of context: every other layer keeps its
// 4,096-token window. Formula: 21 x 4,096 + 21 x 8,192 tokens x 8,192 B
// (2 x 8 KV heads x 256 x 2 B) = 2,113,929,216 B; the pool's pages (21
// layers x 128 tokens) hold exactly that: 64 full + 32 sliding pages.
TEST(KvCacheGroups, Gemma2KvAt8kWithItsWindowMatchesTheFormula) {
  const ModelSpec m = shipped("gemma-2-9b");
  const Bytes per_layer_token = 2 * 8 * 256 * 2;
  ASSERT_EQ(m.kv_bytes_per_token_per_layer(2, 1), per_layer_token);
  const Bytes formula = (21 * 4096 + 21 * 8192) * per_layer_token;
  EXPECT_EQ(formula, 2'113'929'216);
  EXPECT_EQ(m.kv_bytes_for_context(8192, 2, 1), formula);
  const KvCacheGroups g = kv_cache_groups(m);
  EXPECT_EQ(g.pages_held(8192, 128), 64 + 32);
  const Bytes page = 21 * 128 * per_layer_token;
  EXPECT_EQ(g.pages_held(8192, 128) * page, formula);
  // One pool of whole-model blocks would hold 42 x 8,192 tokens: 4/3 as much.
  EXPECT_EQ(m.kv_bytes_per_token(2, 1) * 8192 * 3, formula * 4);

  PoolSizingInput in;
  in.device_memory = 64LL << 30;
  in.memory_fraction = 0.8;
  in.block_size = 128;
  in.kv_groups_by_attention = true;
  const PoolSizing hybrid = size_paged_pool(m, in);
  EXPECT_EQ(hybrid.block_bytes, page);
  EXPECT_EQ(hybrid.num_blocks, hybrid.kv_budget / page);
  in.kv_groups_by_attention = false;
  const PoolSizing single = size_paged_pool(m, in);
  EXPECT_EQ(single.block_bytes, 2 * page);
  EXPECT_FALSE(single.groups.hybrid());
  // The same budget holds 4/3 as many 8K sequences (rounding aside).
  const int64_t seqs_single = single.num_blocks / 64;
  const int64_t seqs_hybrid = hybrid.num_blocks / 96;
  EXPECT_EQ(seqs_hybrid, hybrid.kv_budget / formula);
  EXPECT_GE(seqs_hybrid * 3, seqs_single * 4 - 3);
}

// Hand cases: blocks of 4 tokens, a window of 8, one full and one sliding
// group over a pool of 20 pages.
constexpr int64_t kBlock = 4;

HybridPagedPolicy hand_policy(int64_t pages = 20, int64_t host = 0, bool prefix = true) {
  HybridPagedParams p;
  p.full.num_blocks = pages;
  p.full.block_size = kBlock;
  p.full.block_bytes = 1000;
  p.full.prefix_caching = prefix;
  p.full.host_blocks = host;
  p.groups.page_layers = 1;
  p.groups.full_groups = 1;
  p.groups.sliding_groups = 1;
  p.groups.window = 8;
  return HybridPagedPolicy(p);
}

std::vector<int32_t> ids(int32_t start, int n) {
  std::vector<int32_t> v(static_cast<size_t>(n));
  std::iota(v.begin(), v.end(), start);
  return v;
}

TokenView view(const std::vector<int32_t>& t) {
  return {t.data(), static_cast<int64_t>(t.size()), nullptr, 0};
}

// Admits `t` (hits included) and computes all of it.
SeqSlot admit_all(HybridPagedPolicy& p, const std::vector<int32_t>& t, int64_t* cached = nullptr) {
  PrefixHit hit = p.lookup_prefix(view(t));
  const int64_t c = hit.cached_tokens;
  if (cached) *cached = c;
  const AdmitPlan plan = p.plan_admit(std::move(hit), static_cast<int64_t>(t.size()) - c);
  EXPECT_TRUE(plan.fits);
  const SeqSlot s = p.apply_admit(plan);
  p.commit(s, view(t), static_cast<int64_t>(t.size()));
  return s;
}

TEST(HybridPagedPolicy, SlidingGroupHoldsTheWindowAndFreesWhatSlidesOut) {
  HybridPagedPolicy p = hand_policy();
  const auto t = ids(100, 16);
  PrefixHit none = p.lookup_prefix(view(t));
  ASSERT_EQ(none.cached_tokens, 0);
  const AdmitPlan plan = p.plan_admit(std::move(none), 10);
  EXPECT_EQ(plan.new_blocks, 3 + 3);  // both groups hold ceil(10 / 4) blocks
  const SeqSlot s = p.apply_admit(plan);
  p.commit(s, view(t), 10);  // next token at 10 sees [3, 10]: block 0 stays
  EXPECT_EQ(p.free_blocks(), 14);
  const GrowPlan grow = p.plan_grow(s, 6);
  EXPECT_EQ(grow.new_blocks, 1 + 1);
  p.apply_grow(s, grow, 6);
  p.commit(s, view(t), 16);  // next token at 16 sees [9, 16]: blocks 0, 1 leave
  EXPECT_EQ(p.free_blocks(), 14);
  const CacheAccounting a = p.accounting();
  EXPECT_EQ(a.blocks_used, 4 + 2);
  EXPECT_EQ(a.num_blocks, 20);
  EXPECT_EQ(a.window_evicted_tokens, 8);
  EXPECT_EQ(a.slots_reserved, (4 + 2) * kBlock);
  EXPECT_EQ(a.tokens_held, 16 + 8);
  EXPECT_EQ(p.block_table(s).size(), 4u);  // the full group's table
  EXPECT_EQ(p.sliding_group(0).block_table(0)[0], kNoBlock);
  p.release(s);
  p.check_drained();
}

// vLLM's rule: a hit of L blocks needs the full group's L blocks and the
// sliding group's blocks of the window before token L x 4. Blocks that left
// the window keep their hash in the pool until it reuses them.
TEST(HybridPagedPolicy, PrefixHitNeedsTheWholePrefixAndTheLastWindow) {
  HybridPagedPolicy p = hand_policy();
  const auto a = ids(100, 16);
  p.release(admit_all(p, a));  // sliding blocks 0, 1 freed at commit, 2, 3 at release
  p.check_drained();

  // Same 16 tokens and one more: 4 full blocks, sliding blocks 2 and 3.
  auto b = a;
  b.push_back(7);
  int64_t cached = 0;
  const SeqSlot sb = admit_all(p, b, &cached);
  EXPECT_EQ(cached, 16);
  EXPECT_EQ(p.sliding_group(0).live_blocks(0), 3);  // 2, 3 revived + one new
  p.release(sb);

  // Same first 12 tokens: L = 3 needs sliding blocks 1 and 2; block 1 left
  // A's window but is still in the pool.
  auto c = ids(100, 12);
  for (int32_t x : ids(900, 6)) c.push_back(x);
  const SeqSlot sc = admit_all(p, c, &cached);
  EXPECT_EQ(cached, 12);
  p.release(sc);
  p.check_drained();
}

TEST(HybridPagedPolicy, AnEvictedSlidingBlockShortensTheHit) {
  HybridPagedPolicy p = hand_policy();
  const auto a = ids(100, 16);
  p.release(admit_all(p, a));
  // Free queue: 12 never-used pages, then A's sliding blocks 0, 1 (freed
  // first), its full blocks 3..0, its sliding blocks 3, 2. A request of 28
  // other tokens takes 7 + 7 pages: the 12 fresh ones and sliding 0, 1.
  const auto x = ids(5000, 28);
  PrefixHit none = p.lookup_prefix(view(x));
  const AdmitPlan px = p.plan_admit(std::move(none), 28);
  ASSERT_EQ(px.new_blocks, 14);
  const SeqSlot sx = p.apply_admit(px);
  // All 16 tokens again: the window of token 16 is blocks 2, 3, both kept.
  auto b = a;
  b.push_back(7);
  EXPECT_EQ(p.lookup_prefix(view(b)).cached_tokens, 16);
  // The first 12 only: L = 3 needs sliding block 1 (evicted), L = 1 block 0
  // (evicted): no hit, though the full group has all three.
  auto c = ids(100, 12);
  c.push_back(1);
  EXPECT_EQ(p.lookup_prefix(view(c)).cached_tokens, 0);
  p.release(sx);
  p.check_drained();
}

TEST(HybridPagedPolicy, WithoutPrefixCachingNothingIsRegistered) {
  HybridPagedPolicy p = hand_policy(20, 0, false);
  const auto a = ids(100, 16);
  p.release(admit_all(p, a));
  auto b = a;
  b.push_back(7);
  EXPECT_EQ(p.lookup_prefix(view(b)).cached_tokens, 0);
  EXPECT_EQ(p.pool().num_cached_free(), 0);
  p.check_drained();
}

// Swap moves what every group holds; the full group's blocks still on
// device are revived instead of copied.
TEST(HybridPagedPolicy, SwapMovesEveryGroupsHeldBlocks) {
  HybridPagedPolicy p = hand_policy(20, 10);
  const auto a = ids(100, 16);
  const SeqSlot s = admit_all(p, a);  // full 4, sliding 2 (blocks 2, 3)
  const SwapPlan out = p.plan_swap_out(s);
  EXPECT_TRUE(out.fits);
  EXPECT_EQ(out.blocks, 6);
  EXPECT_EQ(out.bytes, 6 * 1000);
  const HostSlot h = p.apply_swap_out(s, out);
  EXPECT_EQ(p.free_blocks(), 20);
  EXPECT_EQ(p.accounting().host_blocks_used, 6);
  const SwapPlan in = p.plan_swap_in(h);
  EXPECT_TRUE(in.fits);
  EXPECT_EQ(in.copy_blocks, 2);  // the full group's 4 are still on device
  const SeqSlot back = p.apply_swap_in(h, in);
  EXPECT_EQ(p.free_blocks(), 14);
  EXPECT_EQ(p.accounting().host_blocks_used, 0);
  // The sequence keeps growing where it was.
  const GrowPlan g = p.plan_grow(back, 1);
  EXPECT_EQ(g.new_blocks, 2);
  p.apply_grow(back, g, 1);
  p.release(back);
  p.check_drained();
  // Host space is shared by the groups: 6 pages do not fit in 5.
  HybridPagedPolicy small = hand_policy(20, 5);
  EXPECT_FALSE(small.plan_swap_out(admit_all(small, a)).fits);
}

TEST(HybridPagedPolicy, AdmissionCountsEveryGroupAgainstTheOnePool) {
  HybridPagedPolicy p = hand_policy(10);
  PrefixHit none = p.lookup_prefix(view(ids(1, 24)));
  EXPECT_FALSE(p.plan_admit(none, 24).fits);  // 6 + 6 pages > 10
  EXPECT_TRUE(p.plan_admit(none, 20).fits);   // 5 + 5
}

// gemma-2-9b end to end on a small pool: preemption by swap and by
// recompute, prefix hits, every block back at the end (finish() checks).
TEST(HybridPagedPolicy, Gemma2RunsEndToEndWithPreemption) {
  for (const char* preemption : {"recompute", "swap"}) {
    const ScenarioSpec s = scenario_from_text(std::string(R"(
name: unit
seed: 3
device: ascend-910b2
model: gemma-2-9b
kv_cache: {policy: paged, dtype: bf16, block_size: 128, memory_fraction: 0.36,
           prefix_caching: true, preemption: )") +
                                              preemption + R"(}
scheduler: {max_num_seqs: 16, max_batched_tokens: 8192, chunked_prefill: true}
workload:
  kind: synthetic
  requests: 24
  arrival: {process: poisson, rate_per_s: 20}
  input_tokens: {dist: uniform, min: 2000, max: 3800}
  output_tokens: {dist: uniform, min: 400, max: 800}
  shared_prefix: {groups: 2, tokens: 1024, popularity: zipf, zipf_s: 1.0}
)");
    ServingEngine engine(s, nullptr);
    const RunMetrics m = engine.run();
    EXPECT_EQ(m.requests.completed, 24) << preemption;
    EXPECT_GT(m.requests.preemptions, 0) << preemption;
    EXPECT_GT(m.kv_cache.window_evicted_tokens, 0) << preemption;
    EXPECT_GT(testing::pool_of(m).prefix_hit_rate, 0.0) << preemption;
    if (std::string(preemption) == "swap") {
      EXPECT_GT(testing::pool_of(m).swapped_bytes, 0);
    } else {  // re-admissions find their blocks again, both groups'
      EXPECT_GT(testing::pool_of(m).recompute_hit_rate, 0.0);
    }
    EXPECT_EQ(testing::pool_of(m).block_bytes, 21 * 128 * 8192) << preemption;
  }
}

TEST(HybridPagedPolicy, TiersBelowTheDeviceAreRefusedOnAHybridModel) {
  try {
    scenario_from_text(R"(
device: ascend-910b2
model: gemma-2-9b
kv_cache: {policy: paged, dtype: bf16, prefix_caching: true}
kv_tiers:
  tiers:
    - {name: dram, capacity: 8GiB, read_bandwidth: 1GB/s, write_bandwidth: 1GB/s}
workload: {kind: synthetic, requests: 1, arrival: {process: constant, rate_per_s: 1},
           input_tokens: 16, output_tokens: 4}
)");
    FAIL() << "accepted kv_tiers on a hybrid model";
  } catch (const config::ConfigError& e) {
    EXPECT_NE(std::string(e.what()).find("KV cache groups keep no tiers"), std::string::npos)
        << e.what();
  }
}

}  // namespace
}  // namespace kvsim::KVSIM_TEST_FILE_SCOPE
