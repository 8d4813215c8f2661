// The paged policy: block tables, prefix caching by chained hashes, swap.
#include <gtest/gtest.h>

#include <numeric>
#include <vector>

#include "sim/cache/paged_policy.hpp"
#include "workloads/token_content.hpp"

namespace kvsim::KVSIM_TEST_FILE_SCOPE {
namespace {

constexpr int64_t kBlock = 4;

PagedParams params(int64_t blocks, int64_t host_blocks = 0, bool prefix = true) {
  PagedParams p;
  p.num_blocks = blocks;
  p.block_size = kBlock;
  p.block_bytes = 1000;
  p.prefix_caching = prefix;
  p.host_blocks = host_blocks;
  return p;
}

std::vector<int32_t> seq(int32_t start, int n) {
  std::vector<int32_t> v(static_cast<size_t>(n));
  std::iota(v.begin(), v.end(), start);
  return v;
}

TokenView view(const std::vector<int32_t>& prompt) {
  return {prompt.data(), static_cast<int64_t>(prompt.size()), nullptr, 0};
}

// Admits the whole prompt, computes it, and returns the slot.
SeqSlot admit_and_compute(PagedPolicy& p, const std::vector<int32_t>& prompt) {
  PrefixHit hit = p.lookup_prefix(view(prompt));
  const int64_t cached = hit.cached_tokens;
  AdmitPlan plan = p.plan_admit(std::move(hit), static_cast<int64_t>(prompt.size()) - cached);
  EXPECT_TRUE(plan.fits);
  const SeqSlot s = p.apply_admit(plan);
  p.commit(s, view(prompt), static_cast<int64_t>(prompt.size()));
  return s;
}

TEST(PagedPolicy, BlockTableCoversTheTokens) {
  PagedPolicy p(params(10));
  const auto prompt = seq(100, 9);  // 9 tokens -> 3 blocks of 4
  const SeqSlot s = admit_and_compute(p, prompt);
  EXPECT_EQ(p.block_table(s).size(), 3u);
  EXPECT_EQ(p.free_blocks(), 7);
  // Growing by 3 tokens (to 12) needs no new block; by 4 (to 13) one.
  EXPECT_EQ(p.plan_grow(s, 3).new_blocks, 0);
  EXPECT_EQ(p.plan_grow(s, 4).new_blocks, 1);
  p.release(s);
  p.check_drained();
}

TEST(PagedPolicy, RequestsSharingAnNBlockPrefixHitExactlyNBlocks) {
  for (int n = 0; n <= 4; ++n) {
    PagedPolicy p(params(64));
    const auto prefix = seq(1, n * static_cast<int>(kBlock));
    auto a = prefix, b = prefix;
    const auto tail_a = seq(1000, 7), tail_b = seq(2000, 7);
    a.insert(a.end(), tail_a.begin(), tail_a.end());
    b.insert(b.end(), tail_b.begin(), tail_b.end());
    const SeqSlot sa = admit_and_compute(p, a);
    const PrefixHit hit = p.lookup_prefix(view(b));
    EXPECT_EQ(hit.blocks.size(), static_cast<size_t>(n)) << "prefix of " << n << " blocks";
    EXPECT_EQ(hit.cached_tokens, n * kBlock);
    for (int i = 0; i < n; ++i)
      EXPECT_EQ(hit.blocks[static_cast<size_t>(i)], p.block_table(sa)[static_cast<size_t>(i)]);
    p.release(sa);
    p.check_drained();
  }
}

TEST(PagedPolicy, HashesAreChainedSoAMatchingBlockAfterADifferentOneMisses) {
  PagedPolicy p(params(64));
  auto a = seq(1, 12);
  auto b = a;
  b[0] = 999;  // first block differs, blocks 2 and 3 identical in content
  const SeqSlot sa = admit_and_compute(p, a);
  EXPECT_EQ(p.lookup_prefix(view(b)).blocks.size(), 0u);
  p.release(sa);
}

TEST(PagedPolicy, TheLastTokenIsAlwaysRecomputed) {
  PagedPolicy p(params(64));
  const auto prompt = seq(1, 8);  // exactly two blocks
  const SeqSlot s = admit_and_compute(p, prompt);
  // Same prompt again: only (8 - 1) / 4 = 1 block may hit.
  EXPECT_EQ(p.lookup_prefix(view(prompt)).cached_tokens, 4);
  p.release(s);
}

TEST(PagedPolicy, FreedBlocksStayReusableUntilEvicted) {
  PagedPolicy p(params(4));
  const auto a = seq(1, 9);  // 3 blocks, 2 full
  const SeqSlot sa = admit_and_compute(p, a);
  p.release(sa);
  EXPECT_EQ(p.free_blocks(), 4);
  EXPECT_EQ(p.lookup_prefix(view(a)).blocks.size(), 2u);  // still cached
  // A different 16-token prompt takes all 4 blocks, evicting both.
  const SeqSlot sb = admit_and_compute(p, seq(500, 16));
  EXPECT_EQ(p.accounting().evictions, 2u);
  p.release(sb);
  EXPECT_EQ(p.lookup_prefix(view(a)).blocks.size(), 0u);
  p.check_drained();
}

TEST(PagedPolicy, RevivingFreeCachedBlocksCountsAgainstFreeSpace) {
  PagedPolicy p(params(3));
  const auto a = seq(1, 9);
  const SeqSlot sa = admit_and_compute(p, a);  // 3 blocks
  p.release(sa);
  PrefixHit hit = p.lookup_prefix(view(a));
  ASSERT_EQ(hit.blocks.size(), 2u);
  // 2 revived + 1 new = 3 = everything free: fits; one token more would not.
  EXPECT_TRUE(p.plan_admit(hit, 1).fits);
  EXPECT_FALSE(p.plan_admit(hit, 5).fits);
}

TEST(PagedPolicy, NoPrefixCachingMeansNoHitsAndNoHashing) {
  PagedPolicy p(params(16, 0, false));
  const auto a = seq(1, 12);
  const SeqSlot sa = admit_and_compute(p, a);
  EXPECT_EQ(p.lookup_prefix(view(a)).blocks.size(), 0u);
  EXPECT_EQ(p.accounting().prefix_query_tokens, 0);
  p.release(sa);
  p.check_drained();
}

TEST(PagedPolicy, SwapOutAndInMovesBlockBytesAndRespectsHostSpace) {
  PagedPolicy p(params(8, 3));
  const auto a = seq(1, 10);  // 3 blocks, 2 full
  const SeqSlot sa = admit_and_compute(p, a);
  const SwapPlan out = p.plan_swap_out(sa);
  EXPECT_TRUE(out.fits);
  EXPECT_EQ(out.blocks, 3);
  EXPECT_EQ(out.bytes, 3000);
  const HostSlot h = p.apply_swap_out(sa, out);
  EXPECT_EQ(p.free_blocks(), 8);
  EXPECT_EQ(p.accounting().host_blocks_used, 3);
  // Host holds 3 blocks: a second 3-block sequence cannot be swapped out too.
  const SeqSlot sb = admit_and_compute(p, seq(100, 12));
  EXPECT_FALSE(p.plan_swap_out(sb).fits);
  // Swap-in: the two full blocks are still cached on device, only the partial
  // last block crosses the host link.
  const SwapPlan in = p.plan_swap_in(h);
  EXPECT_TRUE(in.fits);
  EXPECT_EQ(in.copy_blocks, 1);
  const SeqSlot sa2 = p.apply_swap_in(h, in);
  EXPECT_EQ(p.block_table(sa2).size(), 3u);
  EXPECT_EQ(p.accounting().swapped_bytes, 4000);
  EXPECT_EQ(p.accounting().bytes_moved, 4000);
  p.release(sa2);
  p.release(sb);
  p.check_drained();
}

TEST(PagedPolicy, CheckDrainedFailsLoudlyWhenASequenceIsStillHeld) {
  PagedPolicy p(params(8));
  admit_and_compute(p, seq(1, 5));
  EXPECT_THROW(p.check_drained(), std::logic_error);
}

TEST(PagedPolicy, GeneratedTokensFillAndHashNewBlocks) {
  PagedPolicy p(params(16));
  const auto prompt = seq(1, 6);
  const auto output = seq(300, 6);
  TokenView v{prompt.data(), 6, output.data(), 0};
  PrefixHit hit = p.lookup_prefix(v);
  const SeqSlot s = p.apply_admit(p.plan_admit(std::move(hit), 6));
  p.commit(s, v, 6);
  for (int g = 1; g <= 5; ++g) {  // decode: each step computes the previous token
    v.output_len = g;
    const GrowPlan plan = p.plan_grow(s, 1);
    ASSERT_TRUE(plan.fits);
    p.apply_grow(s, plan, 1);
    p.commit(s, v, 6 + g);
  }
  // 11 tokens computed: blocks 0 and 1 full and hashed; a new request with the
  // same 11-token content hits both.
  std::vector<int32_t> whole = prompt;
  whole.insert(whole.end(), output.begin(), output.begin() + 5);
  EXPECT_EQ(p.lookup_prefix(view(whole)).blocks.size(), 2u);
  p.release(s);
  p.check_drained();
}

// Blocks filled one decode at a time get the hashes the whole content's
// chain gives, whether their ids are held or described by runs, whether a
// block lies in one run or straddles the prompt and the output, and whether
// prepare_commit() ran first.
TEST(PagedPolicy, DecodedBlocksHashAsTheWholeChainDoes) {
  for (const bool described : {false, true}) {
    for (const bool prepared : {false, true}) {
      PagedPolicy p(params(64));
      TokenContent prompt;
      TokenContent output;
      prompt.append_stream(7, 50000, 10);  // two runs: blocks straddle them
      prompt.append_stream(8, 50000, 9);
      output.append_stream(9, 50000, 60);
      if (!described) {
        prompt.mutable_ids();
        output.mutable_ids();
      }
      TokenView v = TokenView::of(prompt, output, 0);
      PrefixHit hit = p.lookup_prefix(v);
      const SeqSlot s = p.apply_admit(p.plan_admit(std::move(hit), 19));
      p.commit(s, v, 19);
      for (int g = 1; g <= 59; ++g) {
        v = TokenView::of(prompt, output, g);
        const GrowPlan plan = p.plan_grow(s, 1);
        ASSERT_TRUE(plan.fits);
        p.apply_grow(s, plan, 1);
        if (prepared) p.prepare_commit(s, v, 19 + g);
        p.commit(s, v, 19 + g);
        std::vector<BlockHash> whole;
        std::vector<int32_t> scratch(kBlock);
        v.extend_block_hashes(whole, (19 + g) / kBlock, kBlock, scratch.data());
        ASSERT_EQ(p.content_hashes(s), whole) << "after " << g << " generated tokens";
        ASSERT_EQ(p.registered_blocks(s), (19 + g) / kBlock);
      }
      p.release(s);
      p.check_drained();
    }
  }
}

}  // namespace
}  // namespace kvsim::KVSIM_TEST_FILE_SCOPE
