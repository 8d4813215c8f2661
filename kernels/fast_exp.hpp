#pragma once
// exp in fp32, eight lanes at a time, for softmax weights whose results are
// compared with a reference within a tolerance (never for results that must
// match another program bit for bit: llama2.c generation keeps the C
// library's expf). x = k ln2 + r with |r| <= ln2 / 2 (ln2 in two parts, so
// k ln2 is exact to float precision), exp(r) by its Taylor polynomial to
// degree 7 (truncation r^8 / 8! < 6e-9, under half an ulp of 1), times 2^k
// through the exponent bits. Arguments below -87 give exp(-87), about
// 1.6e-38: a softmax weight no sum of order 1 can tell from 0.
#include <cmath>
#include <cstdint>

#if defined(__x86_64__)
#include <immintrin.h>
#endif

namespace kvsim::kernels {

#if defined(__x86_64__)
__attribute__((target("avx2,fma"))) inline __m256 exp_ps_avx2(__m256 x) {
  const __m256 lo = _mm256_set1_ps(-87.0f), hi = _mm256_set1_ps(88.0f);
  x = _mm256_min_ps(_mm256_max_ps(x, lo), hi);
  const __m256 k = _mm256_round_ps(_mm256_mul_ps(x, _mm256_set1_ps(1.44269504f)),
                                   _MM_FROUND_TO_NEAREST_INT | _MM_FROUND_NO_EXC);
  const __m256 r = _mm256_fnmadd_ps(k, _mm256_set1_ps(-2.12194440e-4f),
                                    _mm256_fnmadd_ps(k, _mm256_set1_ps(0.693359375f), x));
  constexpr float kTaylor[8] = {1.0f,      1.0f,       1.0f / 2,   1.0f / 6,
                                1.0f / 24, 1.0f / 120, 1.0f / 720, 1.0f / 5040};
  __m256 p = _mm256_set1_ps(kTaylor[7]);
  for (int j = 6; j >= 0; --j) p = _mm256_fmadd_ps(p, r, _mm256_set1_ps(kTaylor[j]));
  // 2^k: k + 127 into the exponent field (k is within [-126, 127]).
  const __m256i e =
      _mm256_slli_epi32(_mm256_add_epi32(_mm256_cvtps_epi32(k), _mm256_set1_epi32(127)), 23);
  return _mm256_mul_ps(p, _mm256_castsi256_ps(e));
}

// x[0, n) replaced by exp(x), the tail through the C library.
__attribute__((target("avx2,fma"))) inline void exp_in_place_avx2(float* x, int64_t n) {
  int64_t i = 0;
  for (; i + 8 <= n; i += 8) _mm256_storeu_ps(x + i, exp_ps_avx2(_mm256_loadu_ps(x + i)));
  for (; i < n; ++i) x[i] = std::exp(x[i]);
}
#endif

}  // namespace kvsim::kernels
