// Paged decode attention for the sampled numerics checker's shape (see
// decode_fp16_group4_d16 below); the general kernel is in
// attention_decode.cpp.
#include "kernels/attention_decode_parts.hpp"

#if defined(__x86_64__)
#include <Eigen/Core>
#include <cmath>

#include "kernels/fast_exp.hpp"

namespace kvsim::kernels::decode_parts {

// decode_fp16_seq<4, true, kValues512> for a head size of 16 and an even
// number of KV heads (the sampled checker's shape: 2 KV heads, 8 query
// heads), the same operations on every value in the same order, so the same
// bits. What differs is where things live: the key pass takes one KV head
// at a time over a block (its four query heads' queries in eight registers,
// its block max in one, the block's key rows in L1 from the first head's
// pass), and the softmax glue is one pass per row (scores minus the
// running max, exp_ps_avx2, eight lanes = a row of two KV heads' query
// heads) and one over the rows for the block's sums, in the order of
// Eigen's vectorised column sum (row 0, then rows in fours summed pairwise,
// then the rest one by one; Eigen 3.4's packetwise_redux_impl).
template <bool kValues512>
__attribute__((target("avx2,fma,f16c"))) void decode_fp16_group4_d16(
    const KvPool& pool, int64_t layer, const float* q, int64_t k_len,
    std::span<const int32_t> table, int64_t q_heads, float scale, float* out,
    std::vector<float>& scores) {
  constexpr int64_t d = 16, group = 4;
  const int64_t heads = pool.kv_heads();
  const int64_t bt = pool.block_tokens();
  scores.resize(static_cast<size_t>(q_heads * std::min(bt, k_len)));
  auto [qs, mx, sum, bmx] = start_decode(q, q_heads, d, scale, out);
  const int64_t row = heads * d;
  for (int64_t b0 = 0; b0 < k_len; b0 += bt) {
    const int64_t n = std::min(bt, k_len - b0);
    const int32_t block = table[static_cast<size_t>(b0 / bt)];
    const auto* krows =
        reinterpret_cast<const uint16_t*>(pool.row(block, KvPart::key, layer, 0, 0));
    const auto* vrows =
        reinterpret_cast<const uint16_t*>(pool.row(block, KvPart::value, layer, 0, 0));
    // Key pass, one KV head at a time: scores [n, q_heads] and their max.
    const NextBlock next{vrows, n};
    for (int64_t h = 0; h < heads; ++h) {
      const float* qh = qs.data() + h * group * d;
      __m256 qlo[group], qhi[group];
      for (int64_t j = 0; j < group; ++j) {
        qlo[j] = _mm256_loadu_ps(qh + j * d);
        qhi[j] = _mm256_loadu_ps(qh + j * d + 8);
      }
      __m128 bm = _mm_set1_ps(-INFINITY);
      const uint16_t* rows = krows;
      float* sp = scores.data() + h * group;
      int64_t t = 0;
      for (; t + 2 <= n; t += 2, rows += 2 * row, sp += 2 * q_heads) {
        // The first head's pass brings the rows in; the second's finds them in L1.
        if (h == 0) {
          const uint16_t* ahead = rows_ahead(rows, t, n, next, row);
          const uint16_t* far = rows_ahead<kPrefetchFarTokens>(rows, t, n, next, row);
          if (ahead) prefetch_rows(ahead, ahead + row, row);
          if (far) prefetch_rows_l2(far, far + row, row);
        }
        const uint16_t* r0 = rows + h * d;
        const uint16_t* r1 = r0 + row;
        const __m256 k0lo = _mm256_cvtph_ps(_mm_loadu_si128(reinterpret_cast<const __m128i*>(r0)));
        const __m256 k0hi =
            _mm256_cvtph_ps(_mm_loadu_si128(reinterpret_cast<const __m128i*>(r0 + 8)));
        const __m256 k1lo = _mm256_cvtph_ps(_mm_loadu_si128(reinterpret_cast<const __m128i*>(r1)));
        const __m256 k1hi =
            _mm256_cvtph_ps(_mm_loadu_si128(reinterpret_cast<const __m128i*>(r1 + 8)));
        __m256 a[group], b[group];
        for (int64_t j = 0; j < group; ++j) {
          a[j] = _mm256_fmadd_ps(qhi[j], k0hi, _mm256_fmadd_ps(qlo[j], k0lo, _mm256_setzero_ps()));
          b[j] = _mm256_fmadd_ps(qhi[j], k1hi, _mm256_fmadd_ps(qlo[j], k1lo, _mm256_setzero_ps()));
        }
        const __m128 s0 = hsum4(a[0], a[1], a[2], a[3]), s1 = hsum4(b[0], b[1], b[2], b[3]);
        _mm_storeu_ps(sp, s0);
        _mm_storeu_ps(sp + q_heads, s1);
        bm = _mm_max_ps(bm, _mm_max_ps(s0, s1));
      }
      if (t < n) {  // the last token of an odd block: as the general kernel, one score at a time
        const uint16_t* r0 = rows + h * d;
        const __m256 k0lo = _mm256_cvtph_ps(_mm_loadu_si128(reinterpret_cast<const __m128i*>(r0)));
        const __m256 k0hi =
            _mm256_cvtph_ps(_mm_loadu_si128(reinterpret_cast<const __m128i*>(r0 + 8)));
        alignas(16) float sc[group];
        for (int64_t j = 0; j < group; ++j)
          sc[j] = hsum(
              _mm256_fmadd_ps(qhi[j], k0hi, _mm256_fmadd_ps(qlo[j], k0lo, _mm256_setzero_ps())));
        const __m128 s0 = _mm_load_ps(sc);
        _mm_storeu_ps(sp, s0);
        bm = _mm_max_ps(s0, bm);  // std::max(m, s): s where m < s
      }
      _mm_storeu_ps(bmx.data() + h * group, bm);
    }
    raise_running_max(mx.data(), sum.data(), bmx.data(), out, q_heads, d);
    // Weights exp(score - max) in place, eight lanes at a time (q_heads is a
    // multiple of 8: a row is whole vectors), then the block's sums.
    for (int64_t c = 0; c < q_heads; c += 8) {
      const __m256 m = _mm256_loadu_ps(mx.data() + c);
      float* w = scores.data() + c;
      for (int64_t t = 0; t < n; ++t, w += q_heads)
        _mm256_storeu_ps(w, exp_ps_avx2(_mm256_sub_ps(_mm256_loadu_ps(w), m)));
      w = scores.data() + c;
      __m256 p = _mm256_loadu_ps(w);
      int64_t t = 1;
      const int64_t n4 = (n - 1) & ~int64_t{3};
      for (; t < n4; t += 4) {
        const float* r = w + t * q_heads;
        p = _mm256_add_ps(
            p, _mm256_add_ps(_mm256_add_ps(_mm256_loadu_ps(r), _mm256_loadu_ps(r + q_heads)),
                             _mm256_add_ps(_mm256_loadu_ps(r + 2 * q_heads),
                                           _mm256_loadu_ps(r + 3 * q_heads))));
      }
      for (; t < n; ++t) p = _mm256_add_ps(p, _mm256_loadu_ps(w + t * q_heads));
      _mm256_storeu_ps(sum.data() + c, _mm256_add_ps(_mm256_loadu_ps(sum.data() + c), p));
    }
    if constexpr (kValues512) {
      value_pass_avx512<4>(vrows, n, heads, group, d, scores.data(), q_heads, out);
      continue;
    }
    // Value pass, one KV head at a time: its four query heads' sixteen
    // outputs in eight registers across the block, the same fused
    // multiply-adds in token order as the general kernel's pass through
    // memory. The first head's pass brings the rows in (prefetching into
    // the next block's key rows), the second's finds them in L1.
    const NextBlock vnext = next_block_rows(pool, table, b0, bt, k_len, KvPart::key, layer);
    for (int64_t h = 0; h < heads; ++h) {
      float* oh = out + h * group * d;
      __m256 lo[group], hi[group];
      for (int64_t j = 0; j < group; ++j) {
        lo[j] = _mm256_loadu_ps(oh + j * d);
        hi[j] = _mm256_loadu_ps(oh + j * d + 8);
      }
      const uint16_t* rows = vrows;
      const float* w = scores.data() + h * group;
      for (int64_t t = 0; t < n; ++t, rows += row, w += q_heads) {
        if (h == 0 && t % 2 == 0) {
          const uint16_t* ahead = rows_ahead(rows, t, n, vnext, row);
          const uint16_t* far = rows_ahead<kPrefetchFarTokens>(rows, t, n, vnext, row);
          if (ahead) prefetch_rows(ahead, ahead + row, row);
          if (far) prefetch_rows_l2(far, far + row, row);
        }
        const uint16_t* r = rows + h * d;
        const __m256 vlo = _mm256_cvtph_ps(_mm_loadu_si128(reinterpret_cast<const __m128i*>(r)));
        const __m256 vhi =
            _mm256_cvtph_ps(_mm_loadu_si128(reinterpret_cast<const __m128i*>(r + 8)));
        for (int64_t j = 0; j < group; ++j) {
          const __m256 wj = _mm256_broadcast_ss(w + j);
          lo[j] = _mm256_fmadd_ps(wj, vlo, lo[j]);
          hi[j] = _mm256_fmadd_ps(wj, vhi, hi[j]);
        }
      }
      for (int64_t j = 0; j < group; ++j) {
        _mm256_storeu_ps(oh + j * d, lo[j]);
        _mm256_storeu_ps(oh + j * d + 8, hi[j]);
      }
    }
  }
  for (int64_t r = 0; r < q_heads; ++r)
    Eigen::Map<Eigen::ArrayXf>(out + r * d, d) *= 1.0f / sum[static_cast<size_t>(r)];
}

template void decode_fp16_group4_d16<false>(const KvPool&, int64_t, const float*, int64_t,
                                            std::span<const int32_t>, int64_t, float, float*,
                                            std::vector<float>&);
template void decode_fp16_group4_d16<true>(const KvPool&, int64_t, const float*, int64_t,
                                           std::span<const int32_t>, int64_t, float, float*,
                                           std::vector<float>&);

}  // namespace kvsim::kernels::decode_parts
#endif
