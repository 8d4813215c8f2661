// chunk_lru (seed 003): prompt splitting on the separator, content hashes,
// the LRU chunk pool, the dual-pool policy's hits, misses, fallbacks, device
// work and accounting, and the seed's sizing example (scenario-level tests
// are in test_chunk_lru_scenarios.cpp).
#include <gtest/gtest.h>

#include <numeric>
#include <vector>

#include "sim/cache/chunk_lru_metrics.hpp"
#include "sim/cache/chunk_lru_policy.hpp"
#include "sim/cache/chunk_prompt.hpp"
#include "sim/cache/pool_sizing.hpp"
#include "sim/core/metrics.hpp"
#include "sim/policies/chunk_lru_spec.hpp"
#include "tests/support/metric_parts.hpp"

namespace kvsim::KVSIM_TEST_FILE_SCOPE {
namespace {

constexpr int64_t kBlock = 4;
constexpr Bytes kBytesPerToken = 100;
constexpr int32_t kSep = kChunkSeparatorToken;

// Content tokens never use the separator id.
std::vector<int32_t> content(int32_t start, int n) {
  std::vector<int32_t> v(static_cast<size_t>(n));
  std::iota(v.begin(), v.end(), start);
  return v;
}

// segments[0] SEP segments[1] SEP ... SEP segments.back()
std::vector<int32_t> chunked(const std::vector<std::vector<int32_t>>& segments) {
  std::vector<int32_t> p;
  for (size_t i = 0; i < segments.size(); ++i) {
    if (i > 0) p.insert(p.end(), kChunkSeparator.begin(), kChunkSeparator.end());
    p.insert(p.end(), segments[i].begin(), segments[i].end());
  }
  return p;
}

TokenView view(const std::vector<int32_t>& prompt) {
  return {prompt.data(), static_cast<int64_t>(prompt.size()), nullptr, 0};
}

ChunkLruParams params(int64_t main_blocks, int64_t chunk_blocks, int64_t max_chunks = 1 << 20,
                      int64_t max_chunk_tokens = 1 << 20) {
  ChunkLruParams p = declared_chunk_lru_params();
  p.main.num_blocks = main_blocks;
  p.main.block_size = kBlock;
  p.main.block_bytes = kBlock * kBytesPerToken;
  p.chunk_blocks = chunk_blocks;
  p.max_chunks = max_chunks;
  p.max_chunk_tokens = max_chunk_tokens;
  p.keep_eviction_log = true;
  return p;
}

// Admits the whole prompt as the scheduler does, computes it, and returns the slot.
SeqSlot admit(ChunkLruPolicy& p, const std::vector<int32_t>& prompt) {
  std::vector<BlockHash> memo;
  PrefixHit hit = p.lookup_prefix(view(prompt), memo);
  const int64_t cached = hit.cached_tokens;
  const AdmitPlan plan = p.plan_admit(std::move(hit), static_cast<int64_t>(prompt.size()) - cached);
  EXPECT_TRUE(plan.fits);
  const SeqSlot s = p.apply_admit(plan);
  p.commit(s, view(prompt), static_cast<int64_t>(prompt.size()));
  return s;
}

// One request: admit, compute, release.
void serve(ChunkLruPolicy& p, const std::vector<int32_t>& prompt) {
  p.release(admit(p, prompt));
}

TEST(ChunkPrompt, SplitsOnTheSeparatorOnly) {
  const auto prompt = chunked({content(1, 3), content(10, 5), {}, content(20, 2)});
  const auto segs = split_chunked_prompt(prompt.data(), static_cast<int64_t>(prompt.size()));
  ASSERT_EQ(segs.size(), 4u);
  EXPECT_EQ(segs[0].begin, 0);
  EXPECT_EQ(segs[0].length, 3);
  EXPECT_EQ(segs[1].begin, 5);
  EXPECT_EQ(segs[1].length, 5);
  EXPECT_EQ(segs[2].length, 0);  // "####": an empty segment
  EXPECT_EQ(segs[3].begin, static_cast<int64_t>(prompt.size()) - 2);
  // A single separator token is content, not a separator.
  const std::vector<int32_t> lone = {5, kSep, 6, 7};
  EXPECT_EQ(split_chunked_prompt(lone.data(), 4).size(), 1u);
  const auto plain = content(1, 9);
  EXPECT_EQ(split_chunked_prompt(plain.data(), 9).size(), 1u);
}

TEST(ChunkPrompt, ContentHashIgnoresPosition) {
  const auto a = content(100, 7);
  const auto prompt = chunked({content(1, 5), a, content(50, 3)});
  const BlockHash at_offset = chunk_content_hash(prompt.data() + 7, 7);
  EXPECT_EQ(at_offset, chunk_content_hash(a.data(), 7));
  EXPECT_NE(chunk_content_hash(a.data(), 6), chunk_content_hash(a.data(), 7));
  const auto b = content(101, 7);
  EXPECT_NE(chunk_content_hash(b.data(), 7), chunk_content_hash(a.data(), 7));
}

TEST(ChunkPool, EvictsLeastRecentlyUsedUntilTheChunkFits) {
  ChunkPool pool({6, kBlock, 100});
  const BlockHash a{1, 0}, b{2, 0}, c{3, 0};
  pool.insert(a, 8);  // 2 blocks
  pool.insert(b, 8);
  pool.insert(c, 8);           // full
  EXPECT_TRUE(pool.touch(a));  // order now b, c, a
  std::vector<BlockHash> evicted;
  pool.insert(BlockHash{4, 0}, 12, &evicted);  // 3 blocks: b and c go
  EXPECT_EQ(evicted, (std::vector<BlockHash>{b, c}));
  EXPECT_EQ(pool.victim_order(), (std::vector<BlockHash>{a, BlockHash{4, 0}}));
  EXPECT_EQ(pool.free_blocks(), 1);
  EXPECT_EQ(pool.evictions(), 2u);
  EXPECT_FALSE(pool.can_hold(25));
  pool.check_invariants();
  pool.clear();
  EXPECT_EQ(pool.num_chunks(), 0);
  EXPECT_EQ(pool.free_blocks(), 6);
}

TEST(ChunkPool, MaxChunksEvictsTheOldest) {
  ChunkPool pool({100, kBlock, 2});
  std::vector<BlockHash> evicted;
  for (uint64_t i = 1; i <= 4; ++i) pool.insert(BlockHash{i, 0}, 1, &evicted);
  EXPECT_EQ(evicted, (std::vector<BlockHash>{BlockHash{1, 0}, BlockHash{2, 0}}));
  EXPECT_EQ(pool.num_chunks(), 2);
}

// A chunk pool too small for the working set: a known sequence of chunk ids
// and the evictions LRU must produce.
TEST(ChunkLruPolicy, LruOrderWithAPoolTooSmallForTheWorkingSet) {
  // Each document is 10 tokens + 2 separator = 12 tokens = 3 blocks; the
  // chunk pool has 6 blocks: two documents at a time.
  ChunkLruPolicy p(params(64, 6));
  std::vector<std::vector<int32_t>> doc;
  std::vector<BlockHash> id;
  for (int d = 0; d < 4; ++d) {
    doc.push_back(content(100 + 20 * d, 10));
    id.push_back(chunk_content_hash(doc.back().data(), 10));
  }
  const auto question = content(900, 3);
  // No system prompt: the prompt is doc SEP question, one cached segment.
  const int sequence[] = {0, 1, 0, 2, 0, 3, 1, 1};
  for (int d : sequence) serve(p, chunked({doc[static_cast<size_t>(d)], question}));
  // 0 m, 1 m, 0 h (order 1,0), 2 m evicts 1 (0,2), 0 h (2,0), 3 m evicts 2
  // (0,3), 1 m evicts 0 (3,1), 1 h.
  EXPECT_EQ(p.eviction_log(), (std::vector<BlockHash>{id[1], id[2], id[0]}));
  EXPECT_EQ(p.chunk_pool().victim_order(), (std::vector<BlockHash>{id[3], id[1]}));
  EXPECT_EQ(p.stats().hits, 3);
  EXPECT_EQ(p.stats().misses, 5);
  EXPECT_EQ(p.chunk_pool().evictions(), 3u);
  p.check_drained();
}

TEST(ChunkLruPolicy, ShuffledChunksHitWhereverTheyAppear) {
  ChunkLruPolicy p(params(64, 64));
  const auto sys = content(1, 6), a = content(100, 9), b = content(200, 5), q = content(900, 3);
  serve(p, chunked({sys, a, b, q}));
  EXPECT_EQ(p.stats().misses, 3);  // the system prompt is a chunk too
  EXPECT_EQ(p.stats().hits, 0);
  StepWork first;
  ASSERT_TRUE(p.take_pending_work(first));
  // Each miss is prefilled at the virtual position, a chunk after the
  // system prompt attending its 6 + 2 keys (seed 003's mask), then copied
  // and re-rotated.
  ASSERT_EQ(first.seqs.size(), 3u);
  EXPECT_EQ(first.seqs[0].context_before, 0);
  EXPECT_EQ(first.seqs[1].query_tokens, 9 + 2);
  EXPECT_EQ(first.seqs[1].context_before, 6 + 2);
  EXPECT_FALSE(first.seqs[1].samples);
  const int64_t placed = 8 + 11 + 7;  // every segment with its separator
  EXPECT_EQ(first.kv_copy_bytes, placed * kBytesPerToken);
  EXPECT_EQ(first.rerope_tokens, placed);

  const SeqSlot s = admit(p, chunked({sys, b, a, q}));  // other order
  EXPECT_EQ(p.stats().hits, 3);
  EXPECT_EQ(p.stats().misses, 3);
  StepWork second;
  ASSERT_TRUE(p.take_pending_work(second));
  EXPECT_TRUE(second.seqs.empty());  // all hits: no compute, only copies
  EXPECT_EQ(second.kv_copy_bytes, placed * kBytesPerToken);
  StepWork none;
  EXPECT_FALSE(p.take_pending_work(none));
  // The main pool holds the request's own blocks: prompt of 29 tokens.
  EXPECT_EQ(p.block_table(s).size(), 8u);
  p.release(s);
  // Main pool drains; the chunk pool keeps its three chunks.
  p.check_drained();
  EXPECT_EQ(p.free_blocks(), 64);
  EXPECT_EQ(p.chunk_pool().num_chunks(), 3);
  EXPECT_EQ(p.stats().hit_tokens, placed);
  EXPECT_EQ(p.stats().query_tokens, 2 * 29);
}

TEST(ChunkLruPolicy, CachedTokensStopBeforeTheQuestion) {
  ChunkLruPolicy p(params(64, 64));
  const auto prompt = chunked({content(1, 6), content(100, 9), content(900, 5)});
  std::vector<BlockHash> memo;
  const PrefixHit hit = p.lookup_prefix(view(prompt), memo);
  EXPECT_EQ(hit.cached_tokens, 8 + 11);
  EXPECT_EQ(hit.segment_tokens, (std::vector<int64_t>{8, 11}));
  EXPECT_EQ(memo.size(), 2u);
  // A prompt ending with a separator: the last token is still computed.
  const auto open_question = chunked({content(1, 6), {}});
  EXPECT_EQ(p.lookup_prefix(view(open_question)).cached_tokens, 7);
}

TEST(ChunkLruPolicy, NoSeparatorFallsBackToPlainPrefill) {
  ChunkLruPolicy p(params(64, 64));
  const auto prompt = content(1, 20);
  std::vector<BlockHash> memo;
  PrefixHit hit = p.lookup_prefix(view(prompt), memo);
  EXPECT_EQ(hit.cached_tokens, 0);
  serve(p, prompt);
  EXPECT_EQ(p.stats().no_separator, 1);
  EXPECT_EQ(p.stats().hits + p.stats().misses, 0);
  StepWork pass;
  EXPECT_FALSE(p.take_pending_work(pass));
  RunMetrics m;
  p.report(m);
  EXPECT_EQ(testing::chunks_of(m).chunk_fallbacks, 1);
  p.check_drained();
}

TEST(ChunkLruPolicy, ChunkOverMaxChunkTokensIsNotCached) {
  ChunkLruPolicy p(params(64, 64, 1 << 20, /*max_chunk_tokens=*/8));
  const auto small = content(1, 8), big = content(100, 9), q = content(900, 2);
  serve(p, chunked({small, big, q}));
  EXPECT_EQ(p.stats().misses, 1);
  EXPECT_EQ(p.stats().oversized, 1);
  EXPECT_EQ(p.chunk_pool().num_chunks(), 1);
  StepWork pass;
  ASSERT_TRUE(p.take_pending_work(pass));
  // Both computed alone; only the cached one is copied into place.
  ASSERT_EQ(pass.seqs.size(), 2u);
  EXPECT_EQ(pass.seqs[1].query_tokens, 11);
  EXPECT_EQ(pass.rerope_tokens, 10);
  serve(p, chunked({small, big, q}));
  EXPECT_EQ(p.stats().hits, 1);
  EXPECT_EQ(p.stats().oversized, 2);  // never cached, counted each time
  RunMetrics m;
  p.report(m);
  EXPECT_EQ(testing::chunks_of(m).chunk_fallbacks, 2);
  // A chunk larger than the whole chunk pool is not cached either.
  ChunkLruPolicy tiny(params(64, 2));
  serve(tiny, chunked({content(1, 7), q}));  // 9 tokens > 2 blocks of 4
  EXPECT_EQ(tiny.stats().oversized, 1);
  EXPECT_EQ(tiny.chunk_pool().num_chunks(), 0);
}

TEST(ChunkLruPolicy, ClearDropsEveryChunk) {
  ChunkLruPolicy p(params(64, 64));
  const auto prompt = chunked({content(1, 6), content(100, 9), content(900, 3)});
  serve(p, prompt);
  p.clear();
  EXPECT_EQ(p.chunk_pool().num_chunks(), 0);
  serve(p, prompt);
  EXPECT_EQ(p.stats().misses, 4);
  EXPECT_EQ(p.stats().hits, 0);
}

TEST(ChunkLruPolicy, MainPoolFullDoesNotFit) {
  ChunkLruPolicy p(params(4, 64));  // 16 tokens of main pool
  const auto prompt = chunked({content(1, 6), content(100, 9), content(900, 3)});
  PrefixHit hit = p.lookup_prefix(view(prompt));
  const int64_t cached = hit.cached_tokens;
  const AdmitPlan plan = p.plan_admit(std::move(hit), static_cast<int64_t>(prompt.size()) - cached);
  EXPECT_FALSE(plan.fits);
  EXPECT_EQ(plan.hit.cached_tokens, cached);
}

TEST(ChunkLruPolicy, ReportsPoolsAndCounters) {
  ChunkLruPolicy p(params(10, 7));
  serve(p, chunked({content(1, 6), content(100, 9), content(900, 3)}));
  serve(p, chunked({content(1, 6), content(900, 3)}));
  RunMetrics m;
  p.report(m);
  EXPECT_EQ(testing::chunks_of(m).main_pool_bytes, 10 * kBlock * kBytesPerToken);
  EXPECT_EQ(testing::chunks_of(m).chunk_pool_bytes, 7 * kBlock * kBytesPerToken);
  EXPECT_EQ(testing::chunks_of(m).chunk_hits, 1);
  EXPECT_EQ(testing::chunks_of(m).chunk_misses, 2);
  EXPECT_EQ(testing::chunks_of(m).chunk_bytes_copied, (8 + 11 + 8) * kBytesPerToken);
  EXPECT_EQ(testing::chunks_of(m).chunk_rope_tokens, 8 + 11 + 8);
  EXPECT_DOUBLE_EQ(testing::chunks_of(m).chunk_hit_rate, 8.0 / (22 + 11));
  // The generic counters carry the same: what cache-only replays read.
  EXPECT_EQ(p.accounting().prefix_hit_tokens, 8);
  EXPECT_EQ(p.accounting().prefix_query_tokens, 22 + 11);
  EXPECT_EQ(p.accounting().bytes_moved, (8 + 11 + 8) * kBytesPerToken);
}

// Seed 003 §5.3: 32 GB, block 16, 32 heads x 128, fp16. Its "256 KB per
// block" is ONE layer's K and V; a whole block of a 32-layer model is 8 MiB.
TEST(ChunkLruSizing, TheSeedsExampleWithTheLayerCountExplicit) {
  ModelSpec m;
  m.name = "seed-003-example";
  m.hidden_size = 4096;
  m.num_attention_heads = 32;
  m.num_key_value_heads = 32;
  m.head_dim = 128;
  m.intermediate_size = 11008;
  m.vocab_size = 32000;
  m.max_position_embeddings = 4096;
  PoolSizingInput in;
  in.device_memory = 32LL << 30;
  in.memory_fraction = 0.70;
  in.chunk_pool_fraction = 0.15;
  in.block_size = 16;
  in.kv_dtype_bytes = 2;
  in.activation_reserve = 0;
  m.num_hidden_layers = 1;
  const PoolSizing one_layer = size_paged_pool(m, in);
  EXPECT_EQ(one_layer.block_bytes, 256 * 1024);  // 2 x 16 x 32 x 128 x 2
  // 15 % of 32 GiB in 256 KiB blocks: 19,660 blocks, 314,560 tokens (the
  // seed's ~17,000 blocks / 272K tokens is 4.3 GB of 256 KB blocks).
  EXPECT_EQ(one_layer.chunk_pool_blocks, 19660);
  EXPECT_EQ(one_layer.chunk_pool_blocks * 16, 314560);
  m.num_hidden_layers = 32;
  const PoolSizing full = size_paged_pool(m, in);
  EXPECT_EQ(full.block_bytes, 32 * 256 * 1024);   // 8 MiB
  EXPECT_EQ(full.chunk_pool_blocks, 19660 / 32);  // 614 blocks
  EXPECT_EQ(full.chunk_pool_blocks * 16, 9824);   // tokens: 32x fewer than the seed says
  EXPECT_EQ(full.chunk_pool_bytes, 614LL * 8 * 1024 * 1024);
}

// Seed 003's key rule: a chunk computed attending the system prompt is
// valid only after the same system prompt, so its key covers it; a chunk
// computed alone is found after any.
TEST(ChunkLruPolicy, TheKeyCoversTheSystemPromptOnlyWhenTheChunkAttendedIt) {
  const auto sys1 = content(1, 6), sys2 = content(50, 6), doc = content(100, 9);
  const auto q = content(900, 3);
  for (const ChunkAttention attention : {ChunkAttention::system_prompt, ChunkAttention::isolated}) {
    ChunkLruParams pp = params(64, 64);
    pp.attention = attention;
    ChunkLruPolicy p(pp);
    serve(p, chunked({sys1, doc, q}));
    serve(p, chunked({sys2, doc, q}));  // another system prompt, the same document
    const bool seed_mask = attention == ChunkAttention::system_prompt;
    EXPECT_EQ(p.stats().hits, seed_mask ? 0 : 1);
    EXPECT_EQ(p.stats().misses, seed_mask ? 4 : 3);
    serve(p, chunked({sys1, doc, q}));  // the first system prompt again: both hit
    EXPECT_EQ(p.stats().hits, seed_mask ? 2 : 3);
    p.check_drained();
  }
  // The keys themselves: the system prompt by content either way.
  const auto prompt = chunked({sys1, doc, q});
  const auto segs = split_chunked_prompt(prompt.data(), static_cast<int64_t>(prompt.size()));
  const auto seeded = chunk_segment_keys(prompt.data(), segs, ChunkAttention::system_prompt);
  const auto alone = chunk_segment_keys(prompt.data(), segs, ChunkAttention::isolated);
  ASSERT_EQ(seeded.size(), 2u);
  EXPECT_EQ(seeded[0], chunk_content_hash(sys1.data(), 6));
  EXPECT_EQ(alone[1], chunk_content_hash(doc.data(), 9));
  EXPECT_EQ(seeded[1], chained_block_hash(seeded[0], doc.data(), 9));
}

// CacheBlend's recompute is priced as prefills ahead of the step: per
// placed segment ceil(r x tokens) at the segment's end, then one layer's
// pass over every placed token (ceil(P / layers) tokens through all).
TEST(ChunkLruPolicy, SelectiveRecomputeIsPricedAsThePartialPrefillItIs) {
  ChunkLruParams pp = params(64, 64);
  pp.recompute_ratio = 0.25;
  pp.model_layers = 4;
  ChunkLruPolicy p(pp);
  const auto sys = content(1, 6), a = content(100, 9), q = content(900, 3);
  serve(p, chunked({sys, a, q}));
  StepWork pass;
  ASSERT_TRUE(p.take_pending_work(pass));
  // Two misses (8 and 11 tokens with separators), then the recompute.
  ASSERT_EQ(pass.seqs.size(), 2u + 2u + 1u);
  EXPECT_EQ(pass.seqs[2].query_tokens, 2);  // ceil(0.25 x 8)
  EXPECT_EQ(pass.seqs[2].context_before, 8 - 2);
  EXPECT_EQ(pass.seqs[3].query_tokens, 3);  // ceil(0.25 x 11)
  EXPECT_EQ(pass.seqs[3].context_before, 8 + 11 - 3);
  EXPECT_EQ(pass.seqs[4].query_tokens, 5);  // ceil(19 / 4)
  EXPECT_EQ(pass.seqs[4].context_before, 19 - 5);
  EXPECT_EQ(p.stats().recompute_tokens, 5);
  RunMetrics m;
  p.report(m);
  EXPECT_EQ(m.part<ChunkLruMetrics>().chunk_recompute_tokens, 5);
  // Ratio 0 adds nothing.
  ChunkLruPolicy plain(params(64, 64));
  serve(plain, chunked({sys, a, q}));
  StepWork none;
  ASSERT_TRUE(plain.take_pending_work(none));
  EXPECT_EQ(none.seqs.size(), 2u);
}

// A request re-admitted after a recompute preemption finds its own chunks
// again: that counts as a lookup (hits) but not in the hit rate, which is of
// first admissions as the paged pool's prefix_hit_rate is.
TEST(ChunkLruPolicy, AReadmissionIsCountedApartFromTheHitRate) {
  ChunkLruPolicy p(params(64, 64));
  const auto prompt = chunked({content(1, 6), content(100, 9), content(900, 3)});
  serve(p, prompt);
  std::vector<BlockHash> memo;
  PrefixHit hit = p.lookup_prefix(view(prompt), memo);
  hit.readmission = true;
  const int64_t cached = hit.cached_tokens;
  const SeqSlot s = p.apply_admit(p.plan_admit(std::move(hit), 3));
  EXPECT_EQ(p.stats().hits, 2);
  EXPECT_EQ(p.stats().hit_tokens, 0);
  EXPECT_EQ(p.stats().recompute_hit_tokens, cached);
  const CacheAccounting a = p.accounting();
  EXPECT_EQ(a.prefix_hit_tokens, 0);
  EXPECT_EQ(a.prefix_query_tokens, static_cast<int64_t>(prompt.size()));
  EXPECT_EQ(a.recompute_hit_tokens, cached);
  EXPECT_EQ(a.recompute_query_tokens, static_cast<int64_t>(prompt.size()));
  p.release(s);
  p.check_drained();
}

}  // namespace
}  // namespace kvsim::KVSIM_TEST_FILE_SCOPE
