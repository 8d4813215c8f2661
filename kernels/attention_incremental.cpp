#include "kernels/attention_incremental.hpp"

#include <algorithm>
#include <cmath>
#include <stdexcept>

#include "kernels/cpu_features.hpp"

#if defined(__x86_64__)
// GCC 12's AVX-512 intrinsics pass an uninitialised operand where all
// lanes are written, which -Wmaybe-uninitialized reports from the header.
#pragma GCC diagnostic push
#pragma GCC diagnostic ignored "-Wmaybe-uninitialized"
#include <immintrin.h>
#pragma GCC diagnostic pop
#endif

namespace kvsim::kernels {
namespace {

// Below this exp is taken as exp(kExpFloor): the running max of an empty
// state is -inf, and its rescale factor must be a number, not NaN.
constexpr double kExpFloor = -700.0;

// exp on [-700, 0] and a little above: x = k ln2 + r, |r| <= ln2 / 2 (ln2 in
// two parts, fdlibm's, so k ln2 is exact), exp(r) by its Taylor polynomial
// to degree 12 (truncation r^13 / 13! < 2e-16), times 2^k through the
// exponent bits.
constexpr double kLog2e = 1.4426950408889634;
constexpr double kLn2Hi = 6.93147180369123816490e-01;
constexpr double kLn2Lo = 1.90821492927058770002e-10;
constexpr double kTaylor[13] = {
    1.0,        1.0,         1.0 / 2,      1.0 / 6,       1.0 / 24,       1.0 / 120,      1.0 / 720,
    1.0 / 5040, 1.0 / 40320, 1.0 / 362880, 1.0 / 3628800, 1.0 / 39916800, 1.0 / 479001600};

inline double exp_scalar(double x) {
  x = std::clamp(x, kExpFloor, 700.0);
  const double k = std::nearbyint(x * kLog2e);
  const double r = (x - k * kLn2Hi) - k * kLn2Lo;
  double p = kTaylor[12];
  for (int i = 11; i >= 0; --i) p = p * r + kTaylor[i];
  return std::ldexp(p, static_cast<int>(k));
}

void exp_generic(double* x, int64_t n) {
  for (int64_t i = 0; i < n; ++i) x[i] = exp_scalar(x[i]);
}

struct Shape {
  const double* q;
  int64_t q_heads, kv_heads, head_dim;
};

// Scores of every query head against n keys into s [q_heads, n], each
// head's new max (the state's or the keys', whichever is higher) into the
// state, the scores made relative to it, and each head's rescale argument
// (old max - new max) into s[q_heads * n + h]; then one exp over all of
// them; then sums and accumulators rescaled and the weighted values added.
// Keys and values are widened to double once ([n, kv_heads, head_dim] in
// `wide`); with kD, the head size known at compile time, a head's query
// and accumulators stay in registers across the keys.
template <int kD>
__attribute__((always_inline)) inline void append_keys(const Shape& sh, double* state,
                                                       const float* k, const float* v, int64_t n,
                                                       double* s, double* wide,
                                                       void (*exp_all)(double*, int64_t)) {
  const int64_t d = kD > 0 ? kD : sh.head_dim, group = sh.q_heads / sh.kv_heads, stride = d + 2;
  const int64_t row = sh.kv_heads * d;
  // Keys transposed, [kv_heads, head_dim, n]: a head's scores are then
  // sums of columns scaled by its query, vectorised over the keys.
  for (int64_t t = 0; t < n; ++t)
    for (int64_t i = 0; i < row; ++i) wide[i * n + t] = static_cast<double>(k[t * row + i]);
  for (int64_t h = 0; h < sh.q_heads; ++h) {
    const double* qh = sh.q + h * d;
    const double* kt = wide + (h / group) * d * n;
    double* hs = s + h * n;
    std::fill(hs, hs + n, 0.0);
    for (int64_t c = 0; c < d; ++c) {
      const double qc = qh[c];
      const double* col = kt + c * n;
      for (int64_t t = 0; t < n; ++t) hs[t] += qc * col[t];
    }
  }
  for (int64_t h = 0; h < sh.q_heads; ++h) {
    double* hs = s + h * n;
    double bm = -INFINITY;
    for (int64_t t = 0; t < n; ++t) bm = std::max(bm, hs[t]);
    double& mx = state[h * stride];
    const double m_new = std::max(mx, bm);
    for (int64_t t = 0; t < n; ++t) hs[t] -= m_new;
    s[sh.q_heads * n + h] = mx - m_new;  // -inf for an empty state: floored
    mx = m_new;
  }
  exp_all(s, sh.q_heads * n + sh.q_heads);
  for (int64_t i = 0; i < n * row; ++i) wide[i] = static_cast<double>(v[i]);
  for (int64_t h = 0; h < sh.q_heads; ++h) {
    const double corr = s[sh.q_heads * n + h];
    const double* w = s + h * n;
    const double* vr = wide + (h / group) * d;
    double* st = state + h * stride;
    double acc[kD > 0 ? kD : 1];
    double* a = kD > 0 ? acc : st + 2;
    for (int64_t c = 0; c < d; ++c) a[c] = st[2 + c] * corr;
    double add = 0;
    for (int64_t t = 0; t < n; ++t, vr += row) {
      add += w[t];
      for (int64_t c = 0; c < d; ++c) a[c] += w[t] * vr[c];
    }
    st[1] = st[1] * corr + add;
    if (kD > 0) std::copy(a, a + d, st + 2);
  }
}

void append_generic(const Shape& sh, double* state, const float* k, const float* v, int64_t n,
                    double* s) {
  double* wide = s + sh.q_heads * (n + 1);
  if (sh.head_dim == 16) return append_keys<16>(sh, state, k, v, n, s, wide, exp_generic);
  append_keys<0>(sh, state, k, v, n, s, wide, exp_generic);
}

#if defined(__x86_64__)
// The same algorithm, four lanes at a time.
__attribute__((target("avx2,fma"))) void exp_avx2(double* x, int64_t n) {
  const __m256d lo = _mm256_set1_pd(kExpFloor), hi = _mm256_set1_pd(700.0);
  const __m256d log2e = _mm256_set1_pd(kLog2e), ln2hi = _mm256_set1_pd(kLn2Hi),
                ln2lo = _mm256_set1_pd(kLn2Lo);
  int64_t i = 0;
  for (; i + 4 <= n; i += 4) {
    __m256d a = _mm256_min_pd(_mm256_max_pd(_mm256_loadu_pd(x + i), lo), hi);
    const __m256d k =
        _mm256_round_pd(_mm256_mul_pd(a, log2e), _MM_FROUND_TO_NEAREST_INT | _MM_FROUND_NO_EXC);
    const __m256d r = _mm256_fnmadd_pd(k, ln2lo, _mm256_fnmadd_pd(k, ln2hi, a));
    __m256d p = _mm256_set1_pd(kTaylor[12]);
    for (int j = 11; j >= 0; --j) p = _mm256_fmadd_pd(p, r, _mm256_set1_pd(kTaylor[j]));
    // 2^k: k + 1023 into the exponent field (k is within [-1010, 1010]).
    const __m256i e = _mm256_slli_epi64(
        _mm256_add_epi64(_mm256_cvtepi32_epi64(_mm256_cvtpd_epi32(k)), _mm256_set1_epi64x(1023)),
        52);
    _mm256_storeu_pd(x + i, _mm256_mul_pd(p, _mm256_castsi256_pd(e)));
  }
  for (; i < n; ++i) x[i] = exp_scalar(x[i]);
}

// exp_avx2 eight lanes at a time (the same operations on each lane, so
// the same bits), the rest as exp_avx2 takes it: four lanes, then scalar.
__attribute__((target("avx512f,avx512dq,avx512vl,avx2,fma"))) void exp_avx512(double* x,
                                                                              int64_t n) {
  const __m512d lo = _mm512_set1_pd(kExpFloor), hi = _mm512_set1_pd(700.0);
  const __m512d log2e = _mm512_set1_pd(kLog2e), ln2hi = _mm512_set1_pd(kLn2Hi),
                ln2lo = _mm512_set1_pd(kLn2Lo);
  int64_t i = 0;
  for (; i + 8 <= n; i += 8) {
    __m512d a = _mm512_min_pd(_mm512_max_pd(_mm512_loadu_pd(x + i), lo), hi);
    const __m512d k = _mm512_roundscale_pd(_mm512_mul_pd(a, log2e),
                                           _MM_FROUND_TO_NEAREST_INT | _MM_FROUND_NO_EXC);
    const __m512d r = _mm512_fnmadd_pd(k, ln2lo, _mm512_fnmadd_pd(k, ln2hi, a));
    __m512d p = _mm512_set1_pd(kTaylor[12]);
    for (int j = 11; j >= 0; --j) p = _mm512_fmadd_pd(p, r, _mm512_set1_pd(kTaylor[j]));
    const __m512i e = _mm512_slli_epi64(
        _mm512_add_epi64(_mm512_cvtepi32_epi64(_mm512_cvtpd_epi32(k)), _mm512_set1_epi64(1023)),
        52);
    _mm512_storeu_pd(x + i, _mm512_mul_pd(p, _mm512_castsi512_pd(e)));
  }
  if (i < n) exp_avx2(x + i, n - i);
}

// Four lanes of a key or value row from floats, widened to double.
__attribute__((target("avx2,fma"))) inline __m256d widen4(const float* x) {
  return _mm256_cvtps_pd(_mm_loadu_ps(x));
}

// The sums of four vectors' lanes: [sum a, sum b, sum c, sum e].
__attribute__((target("avx2,fma"))) inline __m256d sum_lanes4(__m256d a, __m256d b, __m256d c,
                                                              __m256d e) {
  const __m256d ab = _mm256_hadd_pd(a, b), ce = _mm256_hadd_pd(c, e);
  return _mm256_add_pd(_mm256_permute2f128_pd(ab, ce, 0x20), _mm256_permute2f128_pd(ab, ce, 0x31));
}

// x[0] + ... + x[n - 1] in four lanes (a scalar sum is one add's latency
// per term).
__attribute__((target("avx2,fma"))) inline double sum_avx2(const double* x, int64_t n) {
  __m256d a = _mm256_setzero_pd();
  int64_t t = 0;
  for (; t + 4 <= n; t += 4) a = _mm256_add_pd(a, _mm256_loadu_pd(x + t));
  double lanes[4];
  _mm256_storeu_pd(lanes, a);
  double sum = (lanes[0] + lanes[1]) + (lanes[2] + lanes[3]);
  for (; t < n; ++t) sum += x[t];
  return sum;
}

// The weighted values of kJ query heads of one group (sharing their KV
// head) at once: their accumulators are independent chains, each value
// row widened once for all of them. Terms in key order, as append_keys.
template <int kD, int kJ>
__attribute__((target("avx2,fma"))) void values_avx2(const Shape& sh, double* state, const float* v,
                                                     int64_t n, const double* s, int64_t h0) {
  constexpr int kV = kD / 4;
  const int64_t row = sh.kv_heads * kD, group = sh.q_heads / sh.kv_heads, stride = kD + 2;
  const float* vr = v + (h0 / group) * kD;
  __m256d acc[kJ][kV];
  for (int j = 0; j < kJ; ++j) {
    const double* st = state + (h0 + j) * stride;
    const __m256d corr = _mm256_set1_pd(s[sh.q_heads * n + h0 + j]);
    for (int c = 0; c < kV; ++c) acc[j][c] = _mm256_mul_pd(_mm256_loadu_pd(st + 2 + 4 * c), corr);
  }
  for (int64_t t = 0; t < n; ++t, vr += row) {
    __m256d x[kV];
    for (int c = 0; c < kV; ++c) x[c] = widen4(vr + 4 * c);
    for (int j = 0; j < kJ; ++j) {
      const __m256d w = _mm256_set1_pd(s[(h0 + j) * n + t]);
      for (int c = 0; c < kV; ++c) acc[j][c] = _mm256_fmadd_pd(w, x[c], acc[j][c]);
    }
  }
  for (int j = 0; j < kJ; ++j) {
    double* st = state + (h0 + j) * stride;
    st[1] = st[1] * s[sh.q_heads * n + h0 + j] + sum_avx2(s + (h0 + j) * n, n);
    for (int c = 0; c < kV; ++c) _mm256_storeu_pd(st + 2 + 4 * c, acc[j][c]);
  }
}

// append_keys for a head size of kD (a multiple of 4), reading the float
// rows in place: a head's scores four keys at a time from its query held in
// registers (no transposed copy of the keys), then values_avx2. Only the
// summation order of a score's terms differs from append_keys.
template <int kD>
__attribute__((target("avx2,fma"))) void append_rows_avx2(const Shape& sh, double* state,
                                                          const float* k, const float* v, int64_t n,
                                                          double* s) {
  constexpr int kV = kD / 4;
  const int64_t row = sh.kv_heads * kD, group = sh.q_heads / sh.kv_heads, stride = kD + 2;
  for (int64_t h = 0; h < sh.q_heads; ++h) {
    const float* kr = k + (h / group) * kD;
    __m256d q[kV];
    for (int c = 0; c < kV; ++c) q[c] = _mm256_loadu_pd(sh.q + h * kD + 4 * c);
    double* hs = s + h * n;
    __m256d vmax = _mm256_set1_pd(-INFINITY);
    int64_t t = 0;
    for (; t + 4 <= n; t += 4) {
      __m256d a[4];
      for (int u = 0; u < 4; ++u) {
        const float* r = kr + (t + u) * row;
        a[u] = _mm256_mul_pd(q[0], widen4(r));
        for (int c = 1; c < kV; ++c) a[u] = _mm256_fmadd_pd(q[c], widen4(r + 4 * c), a[u]);
      }
      const __m256d sc = sum_lanes4(a[0], a[1], a[2], a[3]);
      _mm256_storeu_pd(hs + t, sc);
      vmax = _mm256_max_pd(vmax, sc);
    }
    double lanes[4];
    _mm256_storeu_pd(lanes, vmax);
    double bm = std::max(std::max(lanes[0], lanes[1]), std::max(lanes[2], lanes[3]));
    for (; t < n; ++t) {
      const float* r = kr + t * row;
      __m256d a = _mm256_mul_pd(q[0], widen4(r));
      for (int c = 1; c < kV; ++c) a = _mm256_fmadd_pd(q[c], widen4(r + 4 * c), a);
      _mm256_storeu_pd(lanes, a);
      hs[t] = (lanes[0] + lanes[1]) + (lanes[2] + lanes[3]);
      bm = std::max(bm, hs[t]);
    }
    double& mx = state[h * stride];
    const double m_new = std::max(mx, bm);
    const __m256d mv = _mm256_set1_pd(m_new);
    t = 0;
    for (; t + 4 <= n; t += 4) _mm256_storeu_pd(hs + t, _mm256_sub_pd(_mm256_loadu_pd(hs + t), mv));
    for (; t < n; ++t) hs[t] -= m_new;
    s[sh.q_heads * n + h] = mx - m_new;  // -inf for an empty state: floored
    mx = m_new;
  }
  if (cpu_has_avx512())
    exp_avx512(s, sh.q_heads * n + sh.q_heads);
  else
    exp_avx2(s, sh.q_heads * n + sh.q_heads);
  int64_t h = 0;
  for (; group % 2 == 0 && h + 2 <= sh.q_heads; h += 2) values_avx2<kD, 2>(sh, state, v, n, s, h);
  for (; h < sh.q_heads; ++h) values_avx2<kD, 1>(sh, state, v, n, s, h);
}

// values_avx2<16, 2> for a KV head's four query heads at once with
// AVX-512: each head's sixteen accumulators in two 512-bit registers, each
// value row widened once for the four heads. Every accumulator gets the
// same rescale and fused multiply-adds in the same (key) order, and the
// sums the same expression, so the same bits.
__attribute__((target("avx512f,avx512dq,avx512vl,avx2,fma"))) void values_group4_avx512(
    const Shape& sh, double* state, const float* v, int64_t n, const double* s, int64_t g) {
  constexpr int kD = 16, kG = 4;
  const int64_t row = sh.kv_heads * kD, stride = kD + 2;
  const float* vr = v + g * kD;
  __m512d acc[kG][2];
  for (int j = 0; j < kG; ++j) {
    const double* st = state + (g * kG + j) * stride;
    const __m512d corr = _mm512_set1_pd(s[sh.q_heads * n + g * kG + j]);
    acc[j][0] = _mm512_mul_pd(_mm512_loadu_pd(st + 2), corr);
    acc[j][1] = _mm512_mul_pd(_mm512_loadu_pd(st + 10), corr);
  }
  for (int64_t t = 0; t < n; ++t, vr += row) {
    const __m512d x0 = _mm512_cvtps_pd(_mm256_loadu_ps(vr)),
                  x1 = _mm512_cvtps_pd(_mm256_loadu_ps(vr + 8));
    for (int j = 0; j < kG; ++j) {
      const __m512d w = _mm512_set1_pd(s[(g * kG + j) * n + t]);
      acc[j][0] = _mm512_fmadd_pd(w, x0, acc[j][0]);
      acc[j][1] = _mm512_fmadd_pd(w, x1, acc[j][1]);
    }
  }
  for (int j = 0; j < kG; ++j) {
    const int64_t h = g * kG + j;
    double* st = state + h * stride;
    st[1] = st[1] * s[sh.q_heads * n + h] + sum_avx2(s + h * n, n);
    _mm512_storeu_pd(st + 2, acc[j][0]);
    _mm512_storeu_pd(st + 10, acc[j][1]);
  }
}

// append_rows_avx2<16> for four query heads per KV head (the sampled
// checker's shape) with AVX-512's 32 registers: four keys' rows of a KV
// head are widened once for the four query heads that read them, instead
// of once per query head. Each score is the same products and sums in the
// same order, and the rest is append_rows_avx2's, so the same bits.
__attribute__((target("avx512f,avx512dq,avx512vl,avx2,fma"))) void append_rows_group4_avx512(
    const Shape& sh, double* state, const float* k, const float* v, int64_t n, double* s) {
  constexpr int kD = 16, kV = kD / 4, kG = 4;
  const int64_t row = sh.kv_heads * kD, stride = kD + 2;
  for (int64_t g = 0; g < sh.kv_heads; ++g) {
    const float* kr = k + g * kD;
    __m256d vmax[kG];
    for (int j = 0; j < kG; ++j) vmax[j] = _mm256_set1_pd(-INFINITY);
    int64_t t = 0;
    for (; t + 4 <= n; t += 4) {
      __m256d x[4][kV];
      for (int u = 0; u < 4; ++u)
        for (int c = 0; c < kV; ++c) x[u][c] = widen4(kr + (t + u) * row + 4 * c);
      for (int j = 0; j < kG; ++j) {
        const double* q = sh.q + (g * kG + j) * kD;
        __m256d a[4];
        for (int u = 0; u < 4; ++u) {
          a[u] = _mm256_mul_pd(_mm256_loadu_pd(q), x[u][0]);
          for (int c = 1; c < kV; ++c)
            a[u] = _mm256_fmadd_pd(_mm256_loadu_pd(q + 4 * c), x[u][c], a[u]);
        }
        const __m256d sc = sum_lanes4(a[0], a[1], a[2], a[3]);
        _mm256_storeu_pd(s + (g * kG + j) * n + t, sc);
        vmax[j] = _mm256_max_pd(vmax[j], sc);
      }
    }
    for (int j = 0; j < kG; ++j) {
      const int64_t h = g * kG + j;
      __m256d q[kV];
      for (int c = 0; c < kV; ++c) q[c] = _mm256_loadu_pd(sh.q + h * kD + 4 * c);
      double* hs = s + h * n;
      double lanes[4];
      _mm256_storeu_pd(lanes, vmax[j]);
      double bm = std::max(std::max(lanes[0], lanes[1]), std::max(lanes[2], lanes[3]));
      for (int64_t r = t; r < n; ++r) {
        const float* kt = kr + r * row;
        __m256d a = _mm256_mul_pd(q[0], widen4(kt));
        for (int c = 1; c < kV; ++c) a = _mm256_fmadd_pd(q[c], widen4(kt + 4 * c), a);
        _mm256_storeu_pd(lanes, a);
        hs[r] = (lanes[0] + lanes[1]) + (lanes[2] + lanes[3]);
        bm = std::max(bm, hs[r]);
      }
      double& mx = state[h * stride];
      const double m_new = std::max(mx, bm);
      const __m256d mv = _mm256_set1_pd(m_new);
      int64_t i = 0;
      for (; i + 4 <= n; i += 4)
        _mm256_storeu_pd(hs + i, _mm256_sub_pd(_mm256_loadu_pd(hs + i), mv));
      for (; i < n; ++i) hs[i] -= m_new;
      s[sh.q_heads * n + h] = mx - m_new;  // -inf for an empty state: floored
      mx = m_new;
    }
  }
  exp_avx512(s, sh.q_heads * n + sh.q_heads);
  for (int64_t g = 0; g < sh.kv_heads; ++g) values_group4_avx512(sh, state, v, n, s, g);
}

__attribute__((target("avx2,fma"))) void append_avx2(const Shape& sh, double* state, const float* k,
                                                     const float* v, int64_t n, double* s) {
  if (sh.head_dim == 16 && sh.q_heads == 4 * sh.kv_heads && cpu_has_avx512())
    return append_rows_group4_avx512(sh, state, k, v, n, s);
  if (sh.head_dim == 16) return append_rows_avx2<16>(sh, state, k, v, n, s);
  if (sh.head_dim == 32) return append_rows_avx2<32>(sh, state, k, v, n, s);
  double* wide = s + sh.q_heads * (n + 1);
  append_keys<0>(sh, state, k, v, n, s, wide, exp_avx2);
}

#endif

}  // namespace

void exp_in_place(double* x, int64_t n) {
#if defined(__x86_64__)
  if (cpu_has_avx2_fma()) return exp_avx2(x, n);
#endif
  exp_generic(x, n);
}

void OnlineSoftmax::reset(const float* q, int64_t q_heads, int64_t kv_heads, int64_t head_dim,
                          float scale) {
  if (q_heads <= 0 || kv_heads <= 0 || head_dim <= 0 || q_heads % kv_heads != 0)
    throw std::invalid_argument("attention: q_heads must be a positive multiple of kv_heads");
  q_heads_ = q_heads;
  kv_heads_ = kv_heads;
  head_dim_ = head_dim;
  q_.resize(static_cast<size_t>(q_heads * head_dim));
  for (size_t i = 0; i < q_.size(); ++i) q_[i] = static_cast<double>(q[i]) * scale;
}

void OnlineSoftmax::clear(double* state) const {
  for (int64_t h = 0; h < q_heads_; ++h) {
    double* st = state + h * (head_dim_ + 2);
    st[0] = -INFINITY;
    std::fill(st + 1, st + head_dim_ + 2, 0.0);
  }
}

void OnlineSoftmax::append(double* state, const float* k, const float* v, int64_t n) {
  if (n <= 0) return;
  // Scores and rescale arguments, then the keys (or values) widened.
  // Grown only: a resize to a length between calls would zero what it adds.
  const auto need = static_cast<size_t>(q_heads_ * (n + 1) + n * kv_heads_ * head_dim_);
  if (scores_.size() < need) scores_.resize(need);
  const Shape sh{q_.data(), q_heads_, kv_heads_, head_dim_};
#if defined(__x86_64__)
  if (cpu_has_avx2_fma()) return append_avx2(sh, state, k, v, n, scores_.data());
#endif
  append_generic(sh, state, k, v, n, scores_.data());
}

void OnlineSoftmax::merge(double* into, const double* from) const {
  const int64_t stride = head_dim_ + 2;
  for (int64_t h = 0; h < q_heads_; ++h) {
    double* a = into + h * stride;
    const double* b = from + h * stride;
    if (b[1] == 0.0) continue;  // no keys on that side
    if (a[1] == 0.0) {
      std::copy(b, b + stride, a);
      continue;
    }
    const double m = std::max(a[0], b[0]);
    double ca = a[0] - m, cb = b[0] - m;
    exp_in_place(&ca, 1);
    exp_in_place(&cb, 1);
    a[0] = m;
    for (int64_t c = 1; c < stride; ++c) a[c] = a[c] * ca + b[c] * cb;
  }
}

void OnlineSoftmax::output(const double* state, float* out) const {
  for (int64_t h = 0; h < q_heads_; ++h) {
    const double* st = state + h * (head_dim_ + 2);
    const double sum = st[1];
    for (int64_t c = 0; c < head_dim_; ++c)
      out[h * head_dim_ + c] = sum > 0 ? static_cast<float>(st[2 + c] / sum) : 0.0f;
  }
}

void IncrementalAttention::reset(const float* q, int64_t q_heads, int64_t kv_heads,
                                 int64_t head_dim, float scale) {
  softmax_.reset(q, q_heads, kv_heads, head_dim, scale);
  state_.resize(static_cast<size_t>(softmax_.state_size()));
  softmax_.clear(state_.data());
  keys_ = 0;
}

void IncrementalAttention::append(const float* k, const float* v, int64_t n) {
  softmax_.append(state_.data(), k, v, n);
  keys_ += std::max<int64_t>(n, 0);
}

void IncrementalAttention::output(float* out) const {
  softmax_.output(state_.data(), out);
}

}  // namespace kvsim::kernels
