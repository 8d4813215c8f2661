#pragma once
// What the fp16 decode kernels (attention_decode.cpp, and the one for the
// sampled checker's shape in attention_decode_group4.cpp) share: horizontal
// sums, the prefetch distances and helpers, the online softmax's rescale,
// the AVX-512 value pass.
// Internal to those two files.
#if defined(__x86_64__)
// GCC 12's AVX-512 intrinsics pass an uninitialised operand where all
// lanes are written, which -Wmaybe-uninitialized reports from the header.
#pragma GCC diagnostic push
#pragma GCC diagnostic ignored "-Wmaybe-uninitialized"
#include <immintrin.h>
#pragma GCC diagnostic pop

#include <algorithm>
#include <cmath>
#include <cstdint>
#include <span>
#include <vector>

#include "kernels/kv_pool.hpp"

namespace kvsim::kernels::decode_parts {

__attribute__((target("avx2,fma,f16c"))) inline float hsum(__m256 v) {
  __m128 lo = _mm256_castps256_ps128(v), hi = _mm256_extractf128_ps(v, 1);
  lo = _mm_add_ps(lo, hi);
  lo = _mm_hadd_ps(lo, lo);
  lo = _mm_hadd_ps(lo, lo);
  return _mm_cvtss_f32(lo);
}

// Four dot-product accumulators reduced to four floats with one hadd tree.
__attribute__((target("avx2,fma,f16c"))) inline __m128 hsum4(__m256 a0, __m256 a1, __m256 a2,
                                                             __m256 a3) {
  const __m256 t = _mm256_hadd_ps(_mm256_hadd_ps(a0, a1), _mm256_hadd_ps(a2, a3));
  return _mm_add_ps(_mm256_castps256_ps128(t), _mm256_extractf128_ps(t, 1));
}

// Rows are prefetched into L1 this many tokens ahead, across block boundaries
// too (measured in bench_attention: single-threaded decode went from about
// half of the copy bandwidth to 64-93% of it; 4, 12 and 16 were no better).
constexpr int64_t kPrefetchTokens = 8;
// And into L2 this many tokens ahead: with 16-token blocks this is the same
// token of the block's V rows while reading its K rows, and of the next
// block's K rows while reading V, so the next block's reads are in flight a
// whole half block early (32K context, 16-token blocks: from about 68% to
// 80-90% of the copy bandwidth; 24 leaves gaps and was slower).
constexpr int64_t kPrefetchFarTokens = 16;

// Two fp16 rows of head_dim values, one prefetch per 64-byte line (into L1).
__attribute__((target("avx2,fma,f16c"))) inline void prefetch_rows(const uint16_t* a,
                                                                   const uint16_t* b, int64_t d) {
  for (int64_t c = 0; c < d; c += 32) {
    _mm_prefetch(reinterpret_cast<const char*>(a + c), _MM_HINT_T0);
    _mm_prefetch(reinterpret_cast<const char*>(b + c), _MM_HINT_T0);
  }
}

// The same into L2.
__attribute__((target("avx2,fma,f16c"))) inline void prefetch_rows_l2(const uint16_t* a,
                                                                      const uint16_t* b,
                                                                      int64_t d) {
  for (int64_t c = 0; c < d; c += 32) {
    _mm_prefetch(reinterpret_cast<const char*>(a + c), _MM_HINT_T1);
    _mm_prefetch(reinterpret_cast<const char*>(b + c), _MM_HINT_T1);
  }
}
// Where the table's next block starts, and how many tokens of it are used.
struct NextBlock {
  const uint16_t* rows = nullptr;
  int64_t tokens = 0;
};
inline NextBlock next_block_rows(const KvPool& pool, std::span<const int32_t> table, int64_t b0,
                                 int64_t bt, int64_t k_len, KvPart part, int64_t layer) {
  const int64_t tokens = std::min(bt, k_len - b0 - bt);
  if (tokens <= 0) return {};
  return {reinterpret_cast<const uint16_t*>(
              pool.row(table[static_cast<size_t>(b0 / bt + 1)], part, layer, 0, 0)),
          tokens};
}
// First row of the token pair kDist after token t of a block of n
// tokens starting at `rows` (t's row), or nullptr past the context.
template <int64_t kDist = kPrefetchTokens>
inline const uint16_t* rows_ahead(const uint16_t* rows, int64_t t, int64_t n, const NextBlock& next,
                                  int64_t row) {
  const int64_t u = t + kDist;
  if (u + 2 <= n) return rows + kDist * row;
  if (u >= n && u - n + 2 <= next.tokens) return next.rows + (u - n) * row;
  return nullptr;
}

// A decode call's starting state: the queries pre-scaled ([q_heads, d]),
// and per query head the running max (-inf), the running sum of
// exp(score - max) and the block's max; the outputs zeroed.
struct DecodeStart {
  std::vector<float> qs, mx, sum, bmx;
};
inline DecodeStart start_decode(const float* q, int64_t q_heads, int64_t d, float scale,
                                float* out) {
  const auto heads = static_cast<size_t>(q_heads);
  DecodeStart s{std::vector<float>(q, q + q_heads * d), std::vector<float>(heads, -INFINITY),
                std::vector<float>(heads), std::vector<float>(heads)};
  for (float& x : s.qs) x *= scale;
  std::fill(out, out + q_heads * d, 0.0f);
  return s;
}

// The online softmax's step at a block: where a query head's block max
// is above its running max, the running max is raised and the head's sum
// and output accumulators are rescaled by exp(old - new) (exp(-inf) = 0 the
// first time). mx, sum, bmx: [q_heads]; out: [q_heads, d], d a multiple of 8.
__attribute__((target("avx2,fma,f16c"))) inline void raise_running_max(float* mx, float* sum,
                                                                       const float* bmx, float* out,
                                                                       int64_t q_heads, int64_t d) {
  for (int64_t r = 0; r < q_heads; ++r) {
    const float m = mx[r], bm = bmx[r];
    if (bm <= m) continue;
    const float corr = std::exp(m - bm);
    mx[r] = bm;
    sum[r] *= corr;
    const __m256 cv = _mm256_set1_ps(corr);
    float* o = out + r * d;
    for (int64_t c = 0; c < d; c += 8)
      _mm256_storeu_ps(o + c, _mm256_mul_ps(cv, _mm256_loadu_ps(o + c)));
  }
}

// The value pass of one block with AVX-512, for head sizes that are a
// multiple of 16: per KV head and 16 values of it, the accumulators of
// its group's query heads stay in registers for the whole block, and each
// value row is widened once for all of them. Each output value gets the
// same fused multiply-adds in the same (token) order as the AVX2 pass, so
// the same bits. w: the block's weights [n, q_heads].
template <int kGroup>
__attribute__((target("avx512f,avx512vl,avx2,fma,f16c"))) inline void value_pass_avx512(
    const uint16_t* rows, int64_t n, int64_t heads, int64_t group, int64_t d, const float* w,
    int64_t q_heads, float* out) {
  if constexpr (kGroup > 0) group = kGroup;
  const int64_t row = heads * d;
  __m512 acc[8];
  for (int64_t h = 0; h < heads; ++h) {
    for (int64_t c = 0; c < d; c += 16) {
      float* oh = out + h * group * d + c;
      for (int64_t j = 0; j < group; ++j) acc[j] = _mm512_loadu_ps(oh + j * d);
      const uint16_t* r = rows + h * d + c;
      const float* wt = w + h * group;
      for (int64_t t = 0; t < n; ++t, r += row, wt += q_heads) {
        const __m512 v = _mm512_cvtph_ps(_mm256_loadu_si256(reinterpret_cast<const __m256i*>(r)));
        for (int64_t j = 0; j < group; ++j)
          acc[j] = _mm512_fmadd_ps(_mm512_set1_ps(wt[j]), v, acc[j]);
      }
      for (int64_t j = 0; j < group; ++j) _mm512_storeu_ps(oh + j * d, acc[j]);
    }
  }
}

// The decode kernel for four query heads per KV head, a head size of 16
// and an even number of KV heads (attention_decode_group4.cpp), with the
// value pass through value_pass_avx512 or AVX2.
template <bool kValues512>
__attribute__((target("avx2,fma,f16c"))) void decode_fp16_group4_d16(
    const KvPool& pool, int64_t layer, const float* q, int64_t k_len,
    std::span<const int32_t> table, int64_t q_heads, float scale, float* out,
    std::vector<float>& scores);

}  // namespace kvsim::kernels::decode_parts
#endif
