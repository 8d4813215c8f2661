// Paged decode attention over a KvPool (seed 001's flash_attn_with_kvcache):
// one pass over the context with an online softmax, an AVX2/F16C path for
// fp16 storage chosen at run time, and paged_varlen_attention with one
// query per sequence otherwise.
#if defined(__x86_64__)
// GCC 12's AVX-512 intrinsics pass an uninitialised operand where all
// lanes are written, which -Wmaybe-uninitialized reports from the header
// (first here: Eigen includes it too).
#pragma GCC diagnostic push
#pragma GCC diagnostic ignored "-Wmaybe-uninitialized"
#include <immintrin.h>
#pragma GCC diagnostic pop
#endif

#include <Eigen/Core>
#include <algorithm>
#include <cmath>
#include <stdexcept>
#include <vector>

#include "kernels/attention.hpp"
#include "kernels/attention_decode_parts.hpp"
#include "kernels/cpu_features.hpp"
#include "kernels/fast_exp.hpp"

namespace kvsim::kernels {
namespace {

#if defined(__x86_64__)
using namespace decode_parts;  // hsum4, the prefetch helpers, value_pass_avx512

// exp_ps_avx2 sixteen lanes at a time (the same operations on each lane,
// so the same bits) over x[0, n), n a multiple of 8; the last 8 through
// exp_ps_avx2.
__attribute__((target("avx512f,avx512vl,avx2,fma,f16c"))) void exp_in_place_avx512(float* x,
                                                                                   int64_t n) {
  const __m512 lo = _mm512_set1_ps(-87.0f), hi = _mm512_set1_ps(88.0f);
  constexpr float kTaylor[8] = {1.0f,      1.0f,       1.0f / 2,   1.0f / 6,
                                1.0f / 24, 1.0f / 120, 1.0f / 720, 1.0f / 5040};
  int64_t i = 0;
  for (; i + 16 <= n; i += 16) {
    const __m512 a = _mm512_min_ps(_mm512_max_ps(_mm512_loadu_ps(x + i), lo), hi);
    const __m512 k = _mm512_roundscale_ps(_mm512_mul_ps(a, _mm512_set1_ps(1.44269504f)),
                                          _MM_FROUND_TO_NEAREST_INT | _MM_FROUND_NO_EXC);
    const __m512 r = _mm512_fnmadd_ps(k, _mm512_set1_ps(-2.12194440e-4f),
                                      _mm512_fnmadd_ps(k, _mm512_set1_ps(0.693359375f), a));
    __m512 p = _mm512_set1_ps(kTaylor[7]);
    for (int j = 6; j >= 0; --j) p = _mm512_fmadd_ps(p, r, _mm512_set1_ps(kTaylor[j]));
    const __m512i e =
        _mm512_slli_epi32(_mm512_add_epi32(_mm512_cvtps_epi32(k), _mm512_set1_epi32(127)), 23);
    _mm512_storeu_ps(x + i, _mm512_mul_ps(p, _mm512_castsi512_ps(e)));
  }
  exp_in_place_avx2(x + i, n - i);
}

// Decode, fp16 storage, one sequence, every head at once, in one pass over
// the context (flash-decoding style online softmax). For each block of the
// table: the key rows give the block's scores for every query head
// ([token, q_head], a few KiB that stay in L1) and their maximum; the
// running max, sum and output accumulators are rescaled when the maximum
// grows; then the block's value rows are read, in memory order, right after
// its key rows. Compared with two passes (all scores, then all values) this
// saves writing and re-reading a [k_len, q_heads] scores buffer and the
// second walk over the block table, and each block's K and V are streamed
// back to back. Prefetch runs kPrefetchTokens (L1) and kPrefetchFarTokens
// (L2) ahead, from K into the same block's V and from V into the next
// block's K.
//
// kGroup is the number of query heads per KV head when known at compile time
// (0: read at run time). With a constant group the per-head accumulator
// arrays below are unrolled into registers instead of living on the stack.
// kFastExp: the block's weights through exp_ps_avx2 instead of expf.
// kValues512: the value pass through value_pass_avx512.
template <int kGroup, bool kFastExp, bool kValues512 = false>
__attribute__((target("avx2,fma,f16c"))) void decode_fp16_seq(const KvPool& pool, int64_t layer,
                                                              const float* q, int64_t k_len,
                                                              std::span<const int32_t> table,
                                                              int64_t q_heads, float scale,
                                                              float* out,
                                                              std::vector<float>& scores) {
  const int64_t d = pool.head_dim();
  const int64_t heads = pool.kv_heads();
  const int64_t group = kGroup > 0 ? kGroup : q_heads / heads;
  const int64_t bt = pool.block_tokens();
  scores.resize(static_cast<size_t>(q_heads * std::min(bt, k_len)));
  auto [qs, mx, sum, bmx] = start_decode(q, q_heads, d, scale, out);
  using ScoreMat = Eigen::Map<Eigen::Array<float, Eigen::Dynamic, Eigen::Dynamic, Eigen::RowMajor>>;
  const Eigen::Map<const Eigen::Array<float, 1, Eigen::Dynamic>> mxa(mx.data(), q_heads);
  Eigen::Map<Eigen::Array<float, 1, Eigen::Dynamic>> suma(sum.data(), q_heads);
  __m256 acc[8], acc1[8];
  const int64_t row = heads * d;  // halves from one token's rows to the next's
  for (int64_t b0 = 0; b0 < k_len; b0 += bt) {
    const int64_t n = std::min(bt, k_len - b0);
    const int32_t block = table[static_cast<size_t>(b0 / bt)];
    const auto* rows = reinterpret_cast<const uint16_t*>(pool.row(block, KvPart::key, layer, 0, 0));
    const auto* vrows =
        reinterpret_cast<const uint16_t*>(pool.row(block, KvPart::value, layer, 0, 0));
    // Key pass: scores [n, q_heads] and their per-head maximum.
    {
      const NextBlock next{vrows, n};
      std::fill(bmx.begin(), bmx.end(), -INFINITY);
      float* sp = scores.data();
      int64_t t = 0;
      // Two tokens per pass share the query loads.
      for (; t + 2 <= n; t += 2, rows += 2 * row, sp += 2 * q_heads) {
        const uint16_t* ahead = rows_ahead(rows, t, n, next, row);
        const uint16_t* far = rows_ahead<kPrefetchFarTokens>(rows, t, n, next, row);
        for (int64_t h = 0; h < heads; ++h) {
          const float* qh = qs.data() + h * group * d;
          const uint16_t* r0 = rows + h * d;
          const uint16_t* r1 = r0 + row;
          // One core's hardware prefetcher does not keep enough reads in
          // flight: ask for the rows kPrefetchTokens ahead into L1 and
          // kPrefetchFarTokens ahead into L2 (into this block's value rows
          // when its key rows end first).
          if (ahead) prefetch_rows(ahead + h * d, ahead + row + h * d, d);
          if (far) prefetch_rows_l2(far + h * d, far + row + h * d, d);
          for (int64_t j = 0; j < group; ++j) acc[j] = acc1[j] = _mm256_setzero_ps();
          for (int64_t c = 0; c < d; c += 8) {
            const __m256 k0 =
                _mm256_cvtph_ps(_mm_loadu_si128(reinterpret_cast<const __m128i*>(r0 + c)));
            const __m256 k1 =
                _mm256_cvtph_ps(_mm_loadu_si128(reinterpret_cast<const __m128i*>(r1 + c)));
            for (int64_t j = 0; j < group; ++j) {
              const __m256 qv = _mm256_loadu_ps(qh + j * d + c);
              acc[j] = _mm256_fmadd_ps(qv, k0, acc[j]);
              acc1[j] = _mm256_fmadd_ps(qv, k1, acc1[j]);
            }
          }
          float* s0 = sp + h * group;
          float* s1 = s0 + q_heads;
          int64_t j = 0;
          for (; j + 4 <= group; j += 4) {
            const __m128 a = hsum4(acc[j], acc[j + 1], acc[j + 2], acc[j + 3]);
            const __m128 b = hsum4(acc1[j], acc1[j + 1], acc1[j + 2], acc1[j + 3]);
            _mm_storeu_ps(s0 + j, a);
            _mm_storeu_ps(s1 + j, b);
            float* m = bmx.data() + h * group + j;
            _mm_storeu_ps(m, _mm_max_ps(_mm_loadu_ps(m), _mm_max_ps(a, b)));
          }
          for (; j < group; ++j) {
            s0[j] = hsum(acc[j]);
            s1[j] = hsum(acc1[j]);
            float& m = bmx[static_cast<size_t>(h * group + j)];
            m = std::max(m, std::max(s0[j], s1[j]));
          }
        }
      }
      for (; t < n; ++t, rows += row, sp += q_heads) {
        for (int64_t h = 0; h < heads; ++h) {
          const float* qh = qs.data() + h * group * d;
          const uint16_t* r0 = rows + h * d;
          for (int64_t j = 0; j < group; ++j) acc[j] = _mm256_setzero_ps();
          for (int64_t c = 0; c < d; c += 8) {
            const __m256 k0 =
                _mm256_cvtph_ps(_mm_loadu_si128(reinterpret_cast<const __m128i*>(r0 + c)));
            for (int64_t j = 0; j < group; ++j)
              acc[j] = _mm256_fmadd_ps(_mm256_loadu_ps(qh + j * d + c), k0, acc[j]);
          }
          for (int64_t j = 0; j < group; ++j) {
            const float sc = hsum(acc[j]);
            sp[h * group + j] = sc;
            float& m = bmx[static_cast<size_t>(h * group + j)];
            m = std::max(m, sc);
          }
        }
      }
    }
    // Online softmax: raise the running max where the block's is higher,
    // rescaling that head's sum and accumulators (exp(-inf) = 0 the first time).
    raise_running_max(mx.data(), sum.data(), bmx.data(), out, q_heads, d);
    ScoreMat sm(scores.data(), n, q_heads);
    if constexpr (kFastExp) {
      sm.rowwise() -= mxa;
      if constexpr (kValues512)
        exp_in_place_avx512(scores.data(), n * q_heads);
      else
        exp_in_place_avx2(scores.data(), n * q_heads);
    } else {
      sm = (sm.rowwise() - mxa).exp();
    }
    suma += sm.colwise().sum();
    if constexpr (kValues512) {
      value_pass_avx512<kGroup>(vrows, n, heads, group, d, scores.data(), q_heads, out);
      continue;
    }
    // Value pass in memory order; the [q_heads, head_dim] accumulators stay in L1.
    {
      rows = vrows;
      const NextBlock next = next_block_rows(pool, table, b0, bt, k_len, KvPart::key, layer);
      const float* w = scores.data();
      int64_t t = 0;
      // Two tokens per pass: one load and one store of the accumulators per two rows.
      for (; t + 2 <= n; t += 2, rows += 2 * row, w += 2 * q_heads) {
        const uint16_t* ahead = rows_ahead(rows, t, n, next, row);
        const uint16_t* far = rows_ahead<kPrefetchFarTokens>(rows, t, n, next, row);
        for (int64_t h = 0; h < heads; ++h) {
          __m256 w0[8], w1[8];
          for (int64_t j = 0; j < group; ++j) {
            w0[j] = _mm256_broadcast_ss(w + h * group + j);
            w1[j] = _mm256_broadcast_ss(w + q_heads + h * group + j);
          }
          const uint16_t* r0 = rows + h * d;
          const uint16_t* r1 = r0 + row;
          if (ahead) prefetch_rows(ahead + h * d, ahead + row + h * d, d);
          if (far) prefetch_rows_l2(far + h * d, far + row + h * d, d);
          float* oh = out + h * group * d;
          for (int64_t c = 0; c < d; c += 8) {
            const __m256 v0 =
                _mm256_cvtph_ps(_mm_loadu_si128(reinterpret_cast<const __m128i*>(r0 + c)));
            const __m256 v1 =
                _mm256_cvtph_ps(_mm_loadu_si128(reinterpret_cast<const __m128i*>(r1 + c)));
            for (int64_t j = 0; j < group; ++j) {
              float* oj = oh + j * d + c;
              _mm256_storeu_ps(
                  oj, _mm256_fmadd_ps(w1[j], v1, _mm256_fmadd_ps(w0[j], v0, _mm256_loadu_ps(oj))));
            }
          }
        }
      }
      for (; t < n; ++t) {
        for (int64_t h = 0; h < heads; ++h, rows += d, w += group) {
          for (int64_t j = 0; j < group; ++j) acc[j] = _mm256_broadcast_ss(w + j);
          float* oh = out + h * group * d;
          for (int64_t c = 0; c < d; c += 8) {
            const __m256 vv =
                _mm256_cvtph_ps(_mm_loadu_si128(reinterpret_cast<const __m128i*>(rows + c)));
            for (int64_t j = 0; j < group; ++j) {
              float* oj = oh + j * d + c;
              _mm256_storeu_ps(oj, _mm256_fmadd_ps(acc[j], vv, _mm256_loadu_ps(oj)));
            }
          }
        }
      }
    }
  }
  for (int64_t r = 0; r < q_heads; ++r)
    Eigen::Map<Eigen::ArrayXf>(out + r * d, d) *= 1.0f / sum[static_cast<size_t>(r)];
}

#endif

}  // namespace

bool fast_fp16_decode_available() {
#if defined(__x86_64__)
  static const bool ok =
      __builtin_cpu_supports("avx2") && __builtin_cpu_supports("fma") && cpu_has_f16c();
  return ok;
#else
  return false;
#endif
}

namespace {

void check_heads(const KvPool& pool, int64_t q_heads) {
  if (q_heads <= 0 || q_heads % pool.kv_heads() != 0)
    throw std::invalid_argument("attention: q_heads must be a positive multiple of kv_heads");
}

void decode_attention(const KvPool& pool, int64_t layer, const float* q,
                      std::span<const int32_t> cache_seqlens,
                      std::span<const std::span<const int32_t>> block_tables, int64_t q_heads,
                      float scale, float* out, bool fast_exp, bool general_only = false) {
  check_heads(pool, q_heads);
  const int64_t d = pool.head_dim();
  const int64_t group = q_heads / pool.kv_heads();
#if defined(__x86_64__)
  if (pool.dtype() == KvDtype::fp16 && d % 8 == 0 && group <= 8 && fast_fp16_decode_available()) {
    std::vector<float> scores;
    for (size_t s = 0; s < cache_seqlens.size(); ++s) {
      if (static_cast<int64_t>(block_tables[s].size()) * pool.block_tokens() < cache_seqlens[s])
        throw std::invalid_argument("attention: block table shorter than the context");
      if (fast_exp && group == 4 && d == 16 && pool.kv_heads() % 2 == 0 && !general_only) {
        // The sampled checker's own shape (2 KV heads of 16, 8 query heads).
        auto* kernel =
            cpu_has_avx512() ? decode_fp16_group4_d16<true> : decode_fp16_group4_d16<false>;
        kernel(pool, layer, q + static_cast<int64_t>(s) * q_heads * d, cache_seqlens[s],
               block_tables[s], q_heads, scale, out + static_cast<int64_t>(s) * q_heads * d,
               scores);
        continue;
      }
      if (fast_exp && group == 4 && d % 16 == 0 && cpu_has_avx512()) {
        // 4 query heads per KV head, other head sizes.
        decode_fp16_seq<4, true, true>(pool, layer, q + static_cast<int64_t>(s) * q_heads * d,
                                       cache_seqlens[s], block_tables[s], q_heads, scale,
                                       out + static_cast<int64_t>(s) * q_heads * d, scores);
        continue;
      }
      auto* kernel = fast_exp ? (group == 1   ? decode_fp16_seq<1, true>
                                 : group == 2 ? decode_fp16_seq<2, true>
                                 : group == 4 ? decode_fp16_seq<4, true>
                                 : group == 8 ? decode_fp16_seq<8, true>
                                              : decode_fp16_seq<0, true>)
                              : (group == 1   ? decode_fp16_seq<1, false>
                                 : group == 2 ? decode_fp16_seq<2, false>
                                 : group == 4 ? decode_fp16_seq<4, false>
                                 : group == 8 ? decode_fp16_seq<8, false>
                                              : decode_fp16_seq<0, false>);
      kernel(pool, layer, q + static_cast<int64_t>(s) * q_heads * d, cache_seqlens[s],
             block_tables[s], q_heads, scale, out + static_cast<int64_t>(s) * q_heads * d, scores);
    }
    return;
  }
#endif
  (void)fast_exp;
  std::vector<int32_t> cu(cache_seqlens.size() + 1);
  for (size_t s = 0; s < cache_seqlens.size(); ++s) cu[s + 1] = static_cast<int32_t>(s + 1);
  paged_varlen_attention(pool, layer, q, cu, cache_seqlens, block_tables, q_heads, scale, out);
}

}  // namespace

void paged_decode_attention(const KvPool& pool, int64_t layer, const float* q,
                            std::span<const int32_t> cache_seqlens,
                            std::span<const std::span<const int32_t>> block_tables, int64_t q_heads,
                            float scale, float* out) {
  decode_attention(pool, layer, q, cache_seqlens, block_tables, q_heads, scale, out, false);
}

void paged_decode_attention_fast_exp(const KvPool& pool, int64_t layer, const float* q,
                                     std::span<const int32_t> cache_seqlens,
                                     std::span<const std::span<const int32_t>> block_tables,
                                     int64_t q_heads, float scale, float* out) {
  decode_attention(pool, layer, q, cache_seqlens, block_tables, q_heads, scale, out, true);
}

void paged_decode_attention_fast_exp_general(const KvPool& pool, int64_t layer, const float* q,
                                             std::span<const int32_t> cache_seqlens,
                                             std::span<const std::span<const int32_t>> block_tables,
                                             int64_t q_heads, float scale, float* out) {
  decode_attention(pool, layer, q, cache_seqlens, block_tables, q_heads, scale, out, true, true);
}

}  // namespace kvsim::kernels
