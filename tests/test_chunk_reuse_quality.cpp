// Seed 003's chunk mask and CacheBlend's selective recompute on a real
// transformer (a small llama2 with random weights, so no shared data is
// needed): what a missed chunk's cached KV attended, that recomputing every
// row is a full prefill bit for bit and recomputing none is plain reuse,
// and which rows a ratio keeps.
#include <gtest/gtest.h>

#include <cmath>
#include <cstring>
#include <numeric>

#include "kernels/chunk_remap.hpp"
#include "kernels/llama2_chunk_reuse.hpp"
#include "kernels/llama2_selective_recompute.hpp"
#include "tests/support/random_llama2.hpp"

namespace kvsim::KVSIM_TEST_FILE_SCOPE {
namespace {

using kernels::ChunkAttention;
using kernels::ChunkReuseOptions;

using kernels::KvPool;

std::vector<int32_t> tokens(int32_t first, int64_t n) {
  std::vector<int32_t> t(static_cast<size_t>(n));
  for (int64_t i = 0; i < n; ++i) t[static_cast<size_t>(i)] = 3 + (first + 7 * i) % 60;
  return t;
}

std::vector<int32_t> iota(int64_t n) {
  std::vector<int32_t> t(static_cast<size_t>(n));
  std::iota(t.begin(), t.end(), 0);
  return t;
}

// Every K and V value of rows [first, first + n) of a pool whose table is 0, 1, 2, ...
std::vector<float> rows_of(const KvPool& pool, int64_t first, int64_t n) {
  std::vector<float> out, row(static_cast<size_t>(pool.head_dim()));
  const int64_t bs = pool.block_tokens();
  for (int64_t r = first; r < first + n; ++r)
    for (int64_t l = 0; l < pool.layers(); ++l)
      for (int64_t h = 0; h < pool.kv_heads(); ++h)
        for (KvPart part : {KvPart::key, KvPart::value}) {
          pool.read_row(static_cast<int32_t>(r / bs), part, l, r % bs, h, row.data());
          out.insert(out.end(), row.begin(), row.end());
        }
  return out;
}

double max_abs_diff(const std::vector<float>& a, const std::vector<float>& b) {
  double m = 0;
  for (size_t i = 0; i < a.size(); ++i) m = std::max(m, std::abs(double(a[i]) - b[i]));
  return m;
}

bool same_bits(const std::vector<float>& a, const std::vector<float>& b) {
  return a.size() == b.size() && std::memcmp(a.data(), b.data(), a.size() * sizeof(float)) == 0;
}

// The KV a full prefill of `prompt` leaves in rows [first, first + n).
std::vector<float> full_prefill_rows(const kernels::Llama2Weights& w,
                                     const std::vector<int32_t>& prompt, int64_t first, int64_t n) {
  const auto len = static_cast<int64_t>(prompt.size());
  KvPool pool((len + 15) / 16, w.config.n_layers, 16, w.config.n_kv_heads, w.config.head_size(),
              kernels::KvDtype::fp32);
  (void)kernels::llama2_forward(w, pool, iota((len + 15) / 16), prompt.data(), len, 0);
  return rows_of(pool, first, n);
}

std::vector<int32_t> concat(std::initializer_list<std::vector<int32_t>> parts) {
  std::vector<int32_t> out;
  for (const auto& p : parts) out.insert(out.end(), p.begin(), p.end());
  return out;
}

TEST(ChunkMask, AMissedChunkSeesTheSystemPromptAndNoOtherChunk) {
  const auto w = testing::random_llama2();
  // a and b of one length, so the chunk c after them sits at one position.
  const auto sys = tokens(1, 12), a = tokens(20, 9), b = tokens(40, 9), c = tokens(5, 10);
  ChunkReuseOptions o;  // system_prompt: the seed's mask
  std::vector<kernels::RecomputeSegment> seg;
  const KvPool with_a = kernels::place_chunks(w, {sys, a, c}, o, 64, seg);
  const int64_t c_first = seg[2].begin, c_len = seg[2].length;
  const auto c_after_a = rows_of(with_a, c_first, c_len);
  // Another chunk before it changes nothing of its KV.
  const KvPool with_b = kernels::place_chunks(w, {sys, b, c}, o, 64, seg);
  EXPECT_TRUE(same_bits(c_after_a, rows_of(with_b, c_first, c_len)));
  // ... while a full prefill, where it sees the chunk before it, differs.
  EXPECT_GT(max_abs_diff(c_after_a, full_prefill_rows(w, concat({sys, a, c}), c_first, c_len)),
            1e-2);
  // It saw the system prompt: right after it, its KV is the KV a full
  // prefill of [system prompt, chunk] gives it (up to the rotations'
  // rounding), and another system prompt changes it.
  const KvPool right_after = kernels::place_chunks(w, {sys, c}, o, 64, seg);
  EXPECT_LT(max_abs_diff(rows_of(right_after, 12, c_len),
                         full_prefill_rows(w, concat({sys, c}), 12, c_len)),
            1e-4);
  const KvPool other_sys = kernels::place_chunks(w, {tokens(33, 12), a, c}, o, 64, seg);
  EXPECT_GT(max_abs_diff(c_after_a, rows_of(other_sys, c_first, c_len)), 1e-2);
  // isolated: the chunk saw only itself, whatever the system prompt.
  o.attention = ChunkAttention::isolated;
  const KvPool alone = kernels::place_chunks(w, {sys, a, c}, o, 64, seg);
  const KvPool alone_other = kernels::place_chunks(w, {tokens(33, 12), a, c}, o, 64, seg);
  EXPECT_TRUE(same_bits(rows_of(alone, c_first, c_len), rows_of(alone_other, c_first, c_len)));
  EXPECT_GT(max_abs_diff(rows_of(alone, c_first, c_len), c_after_a), 1e-2);
}

TEST(SelectiveRecompute, EveryRowRecomputedIsAFullPrefillBitForBit) {
  const auto w = testing::random_llama2();
  const std::vector<std::vector<int32_t>> units = {tokens(1, 12), tokens(20, 19), tokens(40, 17)};
  const auto question = tokens(9, 6);
  for (const ChunkAttention attention : {ChunkAttention::system_prompt, ChunkAttention::isolated}) {
    ChunkReuseOptions o;
    o.attention = attention;
    o.recompute_ratio = 1.0;
    o.generated_tokens = 4;
    const kernels::ChunkReuseResult r = kernels::chunk_reuse_logits(w, units, question, o);
    EXPECT_TRUE(same_bits(r.full_logits, r.reuse_logits));
    EXPECT_EQ(r.kv_max_abs_diff, 0.0);
    EXPECT_EQ(r.max_abs_diff, 0.0);
    EXPECT_EQ(r.recomputed_tokens, r.placed_tokens);
    EXPECT_EQ(r.top1_agreements, r.generated);
    // Less than every row leaves a difference.
    o.recompute_ratio = 0.5;
    EXPECT_GT(kernels::chunk_reuse_logits(w, units, question, o).kv_max_abs_diff, 0.0);
  }
}

TEST(SelectiveRecompute, NoRowRecomputedIsPlainReuse) {
  const auto w = testing::random_llama2();
  const std::vector<std::vector<int32_t>> units = {tokens(1, 12), tokens(20, 19), tokens(40, 17)};
  const auto question = tokens(9, 6);
  ChunkReuseOptions o;
  o.recompute_ratio = 0.0;
  const kernels::ChunkReuseResult r = kernels::chunk_reuse_logits(w, units, question, o);
  // Plain reuse by hand: the placed rows, then the question over them.
  std::vector<kernels::RecomputeSegment> seg;
  KvPool placed = kernels::place_chunks(w, units, o, 64, seg);
  const int64_t first = seg.back().begin + seg.back().length;
  const std::vector<float> plain = kernels::llama2_forward(
      w, placed, iota(4), question.data(), static_cast<int64_t>(question.size()), first);
  EXPECT_TRUE(same_bits(plain, r.reuse_logits));
  EXPECT_EQ(r.recomputed_tokens, 0);
  EXPECT_GT(r.kv_max_abs_diff, 0.0);
}

TEST(SelectiveRecompute, TheRatioKeepsItsShareOfEachSegmentAndTheTopDeviations) {
  const std::vector<double> dev = {0.1, 0.9, 0.5, 0.5, 0.0, 3.0, 2.0, 1.0, 0.2, 0.3};
  const std::vector<kernels::RecomputeSegment> seg = {{0, 4}, {5, 5}};
  // ceil(0.5 x 4) = 2 of the first (0.9, then 0.5 at the earlier row), ceil(0.5 x 5) = 3.
  EXPECT_EQ(kernels::high_deviation_rows(dev, seg, 0.5), (std::vector<int64_t>{1, 2, 5, 6, 7}));
  EXPECT_EQ(kernels::high_deviation_rows(dev, seg, 0.0), (std::vector<int64_t>{}));
  EXPECT_EQ(kernels::high_deviation_rows(dev, seg, 1.0).size(), 9u);  // row 4 is in no segment
  // Through a model: ceil(r x length) placed rows per segment recomputed.
  const auto w = testing::random_llama2();
  ChunkReuseOptions o;
  o.recompute_ratio = 0.15;
  const auto r = kernels::chunk_reuse_logits(w, {tokens(1, 12), tokens(20, 19), tokens(40, 17)},
                                             tokens(9, 6), o);
  EXPECT_EQ(r.recomputed_tokens, 2 + 3 + 3);
}

TEST(SelectiveRecompute, BadArgumentsAreRefused) {
  const auto w = testing::random_llama2();
  KvPool pool(4, w.config.n_layers, 16, w.config.n_kv_heads, w.config.head_size(),
              kernels::KvDtype::fp32);
  const auto t = tokens(1, 20);
  const std::vector<kernels::RecomputeSegment> seg = {{0, 10}};
  EXPECT_THROW(kernels::llama2_forward_selective(w, pool, iota(4), t.data(), 20, 10, seg, 1.5),
               std::invalid_argument);
  EXPECT_THROW(kernels::llama2_forward_selective(w, pool, iota(4), t.data(), 20, 20, seg, 0.5),
               std::invalid_argument);
  const std::vector<kernels::RecomputeSegment> past = {{5, 10}};
  EXPECT_THROW(kernels::llama2_forward_selective(w, pool, iota(4), t.data(), 20, 10, past, 0.5),
               std::invalid_argument);
}

TEST(PrefixReuse, AHitComputedByItsOwnPassDiffersOnlyByRounding) {
  const auto w = testing::random_llama2();
  const auto prompt = tokens(3, 40);
  ChunkReuseOptions o;
  o.generated_tokens = 4;
  const auto none = kernels::prefix_reuse_logits(w, prompt, 0, o);
  EXPECT_TRUE(same_bits(none.full_logits, none.reuse_logits));
  EXPECT_EQ(none.kv_max_abs_diff, 0.0);
  const auto hit = kernels::prefix_reuse_logits(w, prompt, 32, o);
  EXPECT_LT(hit.max_abs_diff, 1e-4);
  EXPECT_LT(hit.kv_max_abs_diff, 1e-5);
  EXPECT_EQ(hit.top1_agreements, hit.generated);
  EXPECT_THROW(kernels::prefix_reuse_logits(w, prompt, 40, o), std::invalid_argument);
}

}  // namespace
}  // namespace kvsim::KVSIM_TEST_FILE_SCOPE
