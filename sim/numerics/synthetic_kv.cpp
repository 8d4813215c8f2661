#if defined(__x86_64__)
// GCC 12's AVX-512 intrinsics pass an uninitialised operand where all
// lanes are written, which -Wmaybe-uninitialized reports from the header.
#pragma GCC diagnostic push
#pragma GCC diagnostic ignored "-Wmaybe-uninitialized"
#include <immintrin.h>
#pragma GCC diagnostic pop
#endif

#include "sim/numerics/synthetic_kv.hpp"

#include <algorithm>

#include "kernels/cpu_features.hpp"
#include "workloads/rng.hpp"

namespace kvsim::numerics {
namespace {

// A 32-bit finaliser (Wellons' lowbias32, from the hash-prospector
// search): every input bit reaches every output bit.
inline uint32_t lowbias32(uint32_t x) {
  x ^= x >> 16;
  x *= 0x7feb352dU;
  x ^= x >> 15;
  x *= 0x846ca68bU;
  x ^= x >> 16;
  return x;
}

constexpr uint32_t kLaneStep = 0x9E3779B9U;  // lane i hashes seed + i * this

// Values 2i and 2i + 1 of a row from lane i's hash, for values [from, d).
void pair_rows_scalar(uint64_t seed, float* row, int64_t from, int64_t d) {
  const auto lo = static_cast<uint32_t>(seed), hi = static_cast<uint32_t>(seed >> 32);
  for (int64_t c = from; c < d; c += 2) {
    const uint32_t r = lowbias32((lo + static_cast<uint32_t>(c / 2) * kLaneStep) ^ hi);
    row[c] = static_cast<float>(r & 0xFFFF) * (1.0f / 32768.0f) - 1.0f;
    if (c + 1 < d) row[c + 1] = static_cast<float>(r >> 16) * (1.0f / 32768.0f) - 1.0f;
  }
}

#if defined(__x86_64__)
// Values c to c + 15 of a row from its seed (lanes c / 2 to c / 2 + 7 of
// pair_rows_scalar's hashes), eight lanes at a time: integer hashing and an
// exact scaling by 2^-15, so the values are bit for bit the scalar ones.
struct Row16 {
  __m256 lo, hi;  // values c to c + 7, c + 8 to c + 15
};
// Lane i's low and high halves are 16-bit words 2i and 2i + 1 of the
// vector, already in value order: widened in two runs of eight. r * 2^-15 -
// 1 is exact in float (16 significant bits), fused or not.
__attribute__((target("avx2,fma"), always_inline)) inline __m256 words_to_values(__m128i words) {
  return _mm256_fmsub_ps(_mm256_cvtepi32_ps(_mm256_cvtepu16_epi32(words)),
                         _mm256_set1_ps(1.0f / 32768.0f), _mm256_set1_ps(1.0f));
}
// step: lane i holds i * kLaneStep.
__attribute__((target("avx2,fma"), always_inline)) inline Row16 pair_row16(uint64_t seed, int64_t c,
                                                                           __m256i step) {
  const auto base = static_cast<uint32_t>(seed) + static_cast<uint32_t>(c / 2) * kLaneStep;
  __m256i x =
      _mm256_xor_si256(_mm256_add_epi32(_mm256_set1_epi32(static_cast<int32_t>(base)), step),
                       _mm256_set1_epi32(static_cast<int32_t>(seed >> 32)));
  x = _mm256_xor_si256(x, _mm256_srli_epi32(x, 16));
  x = _mm256_mullo_epi32(x, _mm256_set1_epi32(0x7feb352d));
  x = _mm256_xor_si256(x, _mm256_srli_epi32(x, 15));
  x = _mm256_mullo_epi32(x, _mm256_set1_epi32(static_cast<int32_t>(0x846ca68bU)));
  x = _mm256_xor_si256(x, _mm256_srli_epi32(x, 16));
  return {words_to_values(_mm256_castsi256_si128(x)),
          words_to_values(_mm256_extracti128_si256(x, 1))};
}
__attribute__((target("avx2,fma"), always_inline)) inline __m256i lane_steps() {
  return _mm256_mullo_epi32(_mm256_setr_epi32(0, 1, 2, 3, 4, 5, 6, 7),
                            _mm256_set1_epi32(static_cast<int32_t>(kLaneStep)));
}

// pair_rows_scalar over a whole row, sixteen values at a time.
__attribute__((target("avx2,fma"), always_inline)) inline void pair_rows_inline(uint64_t seed,
                                                                                float* row,
                                                                                int64_t d) {
  const __m256i step = lane_steps();
  int64_t c = 0;
  for (; c + 16 <= d; c += 16) {
    const Row16 r = pair_row16(seed, c, step);
    _mm256_storeu_ps(row + c, r.lo);
    _mm256_storeu_ps(row + c + 8, r.hi);
  }
  pair_rows_scalar(seed, row, c, d);
}

__attribute__((target("avx2,fma"))) void pair_rows_avx2(uint64_t seed, float* row, int64_t d) {
  pair_rows_inline(seed, row, d);
}

#endif

uint64_t row_seed(Tensor t, int32_t token, int64_t layer, int64_t head) {
  return mix64((static_cast<uint64_t>(static_cast<uint32_t>(token)) << 20) ^
               (static_cast<uint64_t>(layer) << 12) ^ (static_cast<uint64_t>(head) << 4) ^
               static_cast<uint64_t>(t));
}

#if defined(__x86_64__)
// synthetic_kv_rows for two values per hash: every row's hash inlined into
// one loop, so the rows of a run of tokens overlap in the pipeline.
__attribute__((target("avx2,fma"))) void kv_pair_rows_avx2(const SyntheticShape& shape,
                                                           const int32_t* tokens, int64_t n,
                                                           int64_t layer, float* k, float* v) {
  const int64_t d = shape.head_dim;
  for (int64_t t = 0; t < n; ++t) {
    for (int64_t h = 0; h < shape.kv_heads; ++h) {
      pair_rows_inline(row_seed(Tensor::key, tokens[t], layer, h), k + h * d, d);
      pair_rows_inline(row_seed(Tensor::value, tokens[t], layer, h), v + h * d, d);
    }
    k += shape.kv_heads * d;
    v += shape.kv_heads * d;
  }
}
#endif

#if defined(__x86_64__)
// Eight values to fp16 (round to nearest even, encode_decode_half_f16c's
// conversion) and what they decode to.
__attribute__((target("avx2,fma,f16c"), always_inline)) inline void store_half8(__m256 x,
                                                                                uint16_t* dst,
                                                                                float* stored) {
  const __m128i h = _mm256_cvtps_ph(x, _MM_FROUND_TO_NEAREST_INT);
  _mm_storeu_si128(reinterpret_cast<__m128i*>(dst), h);
  _mm256_storeu_ps(stored, _mm256_cvtph_ps(h));
}

// x * c + partner * s rounded after each multiply and the add, as
// rotate_rows_avx computes it (AVX only: it cannot fuse). GCC contracts a
// multiply and an add of vectors into an FMA in C++ even in ISO mode (its
// -ffp-contract=fast default), where FMA is enabled as here: the products
// pass through an empty asm, which it cannot see into, so they are rounded.
__attribute__((target("avx2,fma,f16c"), always_inline)) inline __m256 rotated(__m256 x, __m256 c,
                                                                              __m256 partner,
                                                                              __m256 s) {
  __m256 xc = _mm256_mul_ps(x, c), ps = _mm256_mul_ps(partner, s);
  asm("" : "+x"(xc), "+x"(ps));
  return _mm256_add_ps(xc, ps);
}

// kv_pair_rows_avx2, rotate_rows_avx and encode_decode_half_f16c over 16-
// value heads, without their passes over scratch rows: per run of up to
// kRun tokens, the rows are made and the keys turned (with apply_run's
// table rows `cs`, from the run's first position, by its operations) as
// they go into `*_stored`, then encoded from there and decoded back in
// place while they are in L1. Every stored value and every decoded one is
// the three passes' bits. (Carrying each row from its hash to fp16 in
// registers took 6% longer: one long chain per row, fewer rows in flight.)
__attribute__((target("avx2,fma,f16c"))) void kv_pair_rows_fp16_avx2_d16(
    const SyntheticShape& shape, const int32_t* tokens, int64_t n, int64_t layer, const float* cs,
    bool adjacent, uint16_t* k_half, uint16_t* v_half, float* k_stored, float* v_stored) {
  constexpr int64_t d = 16, kRun = 32;
  const int64_t heads = shape.kv_heads;
  const __m256i step = lane_steps();
  const auto layer_bits = static_cast<uint64_t>(layer) << 12;
  const auto key = static_cast<uint64_t>(Tensor::key), value = static_cast<uint64_t>(Tensor::value);
  for (int64_t from = 0; from < n; from += kRun) {
    const int64_t m = std::min(kRun, n - from);
    float *k = k_stored, *v = v_stored;
    for (int64_t t = from; t < from + m; ++t, cs += 2 * d) {
      const uint64_t base =
          (static_cast<uint64_t>(static_cast<uint32_t>(tokens[t])) << 20) ^ layer_bits;
      const __m256 c0 = _mm256_loadu_ps(cs), c1 = _mm256_loadu_ps(cs + 8);
      const __m256 s0 = _mm256_loadu_ps(cs + d), s1 = _mm256_loadu_ps(cs + d + 8);
      for (int64_t h = 0; h < heads; ++h, k += d, v += d) {
        const uint64_t head = base ^ (static_cast<uint64_t>(h) << 4);
        const Row16 kr = pair_row16(mix64(head ^ key), 0, step);
        const Row16 vr = pair_row16(mix64(head ^ value), 0, step);
        // rotate_rows_avx's partners: each pair swapped (adjacent pairs) or
        // the two halves (rotate-half).
        const __m256 p0 = adjacent ? _mm256_permute_ps(kr.lo, 0xB1) : kr.hi;
        const __m256 p1 = adjacent ? _mm256_permute_ps(kr.hi, 0xB1) : kr.lo;
        _mm256_storeu_ps(k, rotated(kr.lo, c0, p0, s0));
        _mm256_storeu_ps(k + 8, rotated(kr.hi, c1, p1, s1));
        _mm256_storeu_ps(v, vr.lo);
        _mm256_storeu_ps(v + 8, vr.hi);
      }
    }
    const int64_t count = m * heads * d;
    for (int64_t i = 0; i < count; i += 8) {
      store_half8(_mm256_loadu_ps(k_stored + i), k_half + i, k_stored + i);
      store_half8(_mm256_loadu_ps(v_stored + i), v_half + i, v_stored + i);
    }
    k_half += count;
    v_half += count;
    k_stored += count;
    v_stored += count;
  }
}

bool avx2_and_f16c_available() {
  static const bool ok = kernels::cpu_has_avx2_fma() && kernels::cpu_has_f16c();
  return ok;
}
#endif

#if defined(__x86_64__)
#define KVSIM_AVX512 __attribute__((target("avx512f,avx512dq,avx512bw,avx512vl")))

// mix64 on four 64-bit lanes (AVX-512DQ multiplies them): row_seed's bits.
KVSIM_AVX512 inline __m256i mix64_x4(__m256i x) {
  x = _mm256_add_epi64(x, _mm256_set1_epi64x(static_cast<int64_t>(0x9e3779b97f4a7c15ULL)));
  x = _mm256_mullo_epi64(_mm256_xor_si256(x, _mm256_srli_epi64(x, 30)),
                         _mm256_set1_epi64x(static_cast<int64_t>(0xbf58476d1ce4e5b9ULL)));
  x = _mm256_mullo_epi64(_mm256_xor_si256(x, _mm256_srli_epi64(x, 27)),
                         _mm256_set1_epi64x(static_cast<int64_t>(0x94d049bb133111ebULL)));
  return _mm256_xor_si256(x, _mm256_srli_epi64(x, 31));
}

// lowbias32 on sixteen lanes (vector extensions: GCC's 512-bit shift
// intrinsics warn of an uninitialised pass-through operand).
typedef uint32_t U32x16 __attribute__((vector_size(64)));
KVSIM_AVX512 inline __m512i lowbias32_x16(__m512i v) {
  auto x = reinterpret_cast<U32x16>(v);
  x ^= x >> 16;
  x *= 0x7feb352dU;
  x ^= x >> 15;
  x *= 0x846ca68bU;
  x ^= x >> 16;
  return reinterpret_cast<__m512i>(x);
}

// Lane i's low and high 16 bits are values 2i and 2i + 1 of a row: a
// 256-bit half of the hashes widens to one 16-value head, r * 2^-15 - 1.
KVSIM_AVX512 inline __m512 head_values(__m256i half) {
  return _mm512_fmsub_ps(_mm512_cvtepi32_ps(_mm512_cvtepu16_epi32(half)),
                         _mm512_set1_ps(1.0f / 32768.0f), _mm512_set1_ps(1.0f));
}

// RopeTable's rotation of a 16-value head at one position: x * c +
// partner(x) * s, with c and s the table's row rebuilt from its half
// cosines and sines (hcs: cos of the 8 pairs, then sin; s negated where
// the scalar formula subtracts, by its sign bit as the table's -sin is).
struct Rotation {
  __m512 c, s;
};
KVSIM_AVX512 inline Rotation rotation16(const float* hcs, bool adjacent) {
  const __m512 half = _mm512_loadu_ps(hcs);
  if (adjacent) {  // pair i is values 2i and 2i + 1: c[2i] = c[2i + 1], s[2i] = -s[2i + 1]
    const __m512i cos_of = _mm512_setr_epi32(0, 0, 1, 1, 2, 2, 3, 3, 4, 4, 5, 5, 6, 6, 7, 7);
    const __m512i sin_of =
        _mm512_setr_epi32(8, 8, 9, 9, 10, 10, 11, 11, 12, 12, 13, 13, 14, 14, 15, 15);
    const __m512 even = _mm512_castsi512_ps(
        _mm512_setr_epi32(INT32_MIN, 0, INT32_MIN, 0, INT32_MIN, 0, INT32_MIN, 0, INT32_MIN, 0,
                          INT32_MIN, 0, INT32_MIN, 0, INT32_MIN, 0));
    return {_mm512_permutexvar_ps(cos_of, half),
            _mm512_xor_ps(_mm512_permutexvar_ps(sin_of, half), even)};
  }
  // pair i is values i and i + 8: c = [cos, cos], s = [-sin, sin]
  const __m512 low = _mm512_castsi512_ps(
      _mm512_setr_epi32(INT32_MIN, INT32_MIN, INT32_MIN, INT32_MIN, INT32_MIN, INT32_MIN, INT32_MIN,
                        INT32_MIN, 0, 0, 0, 0, 0, 0, 0, 0));
  return {_mm512_shuffle_f32x4(half, half, 0x44),
          _mm512_xor_ps(_mm512_shuffle_f32x4(half, half, 0xEE), low)};
}

// x * c + partner(x) * s as two multiplies and an add in the current
// rounding (the _round forms, which the compiler never fuses into a
// multiply-add), so each value is rotate_rows_avx's bits.
KVSIM_AVX512 inline __m512 rotate16(__m512 x, const Rotation& r, bool adjacent) {
  const __m512 partner = adjacent ? _mm512_permute_ps(x, 0xB1)         // swaps each pair
                                  : _mm512_shuffle_f32x4(x, x, 0x4E);  // swaps the halves
  return _mm512_add_round_ps(_mm512_mul_round_ps(x, r.c, _MM_FROUND_CUR_DIRECTION),
                             _mm512_mul_round_ps(partner, r.s, _MM_FROUND_CUR_DIRECTION),
                             _MM_FROUND_CUR_DIRECTION);
}

// kv_pair_rows_avx2 for 16-value heads, two heads of K or V per 512-bit
// vector (lanes 0-7 one head's pairs, 8-15 the next's), the four rows'
// seeds of a head pair mixed in one 256-bit vector; keys rotated as they
// are made when `cs` (RopeTable's half cosines and sines from the run's
// first position) is given. The same lane-wise integer hash and exact
// scaling as the AVX2 path, so the same values.
KVSIM_AVX512 void kv_pair_rows_avx512_d16(const SyntheticShape& shape, const int32_t* tokens,
                                          int64_t n, int64_t layer, float* k, float* v,
                                          const float* cs, bool adjacent) {
  constexpr int64_t d = 16;
  const int64_t heads = shape.kv_heads;
  const __m512i step =
      _mm512_mullo_epi32(_mm512_setr_epi32(0, 1, 2, 3, 4, 5, 6, 7, 0, 1, 2, 3, 4, 5, 6, 7),
                         _mm512_set1_epi32(static_cast<int32_t>(kLaneStep)));
  // Seeds as 32-bit words [lo K h, hi K h, lo K h+1, hi K h+1, lo V h, ...].
  const __m512i k_lo = _mm512_setr_epi32(0, 0, 0, 0, 0, 0, 0, 0, 2, 2, 2, 2, 2, 2, 2, 2);
  const __m512i k_hi = _mm512_setr_epi32(1, 1, 1, 1, 1, 1, 1, 1, 3, 3, 3, 3, 3, 3, 3, 3);
  const __m512i v_lo = _mm512_setr_epi32(4, 4, 4, 4, 4, 4, 4, 4, 6, 6, 6, 6, 6, 6, 6, 6);
  const __m512i v_hi = _mm512_setr_epi32(5, 5, 5, 5, 5, 5, 5, 5, 7, 7, 7, 7, 7, 7, 7, 7);
  const auto layer_bits = static_cast<uint64_t>(layer) << 12;
  for (int64_t t = 0; t < n; ++t, k += heads * d, v += heads * d) {
    const uint64_t base =
        (static_cast<uint64_t>(static_cast<uint32_t>(tokens[t])) << 20) ^ layer_bits;
    const Rotation rot =
        cs ? rotation16(cs, adjacent) : Rotation{_mm512_setzero_ps(), _mm512_setzero_ps()};
    for (int64_t h = 0; h < heads; h += 2) {
      const auto h0 = static_cast<uint64_t>(h) << 4, h1 = static_cast<uint64_t>(h + 1) << 4;
      const auto key = static_cast<uint64_t>(Tensor::key),
                 value = static_cast<uint64_t>(Tensor::value);
      const __m512i seeds = _mm512_zextsi256_si512(mix64_x4(_mm256_setr_epi64x(
          static_cast<int64_t>(base ^ h0 ^ key), static_cast<int64_t>(base ^ h1 ^ key),
          static_cast<int64_t>(base ^ h0 ^ value), static_cast<int64_t>(base ^ h1 ^ value))));
      const __m512i xk = lowbias32_x16(
          _mm512_xor_si512(_mm512_add_epi32(_mm512_permutexvar_epi32(k_lo, seeds), step),
                           _mm512_permutexvar_epi32(k_hi, seeds)));
      const __m512i xv = lowbias32_x16(
          _mm512_xor_si512(_mm512_add_epi32(_mm512_permutexvar_epi32(v_lo, seeds), step),
                           _mm512_permutexvar_epi32(v_hi, seeds)));
      __m512 k0 = head_values(_mm512_castsi512_si256(xk)),
             k1 = head_values(_mm512_extracti64x4_epi64(xk, 1));
      if (cs) {
        k0 = rotate16(k0, rot, adjacent);
        k1 = rotate16(k1, rot, adjacent);
      }
      _mm512_storeu_ps(k + h * d, k0);
      _mm512_storeu_ps(k + (h + 1) * d, k1);
      _mm512_storeu_ps(v + h * d, head_values(_mm512_castsi512_si256(xv)));
      _mm512_storeu_ps(v + (h + 1) * d, head_values(_mm512_extracti64x4_epi64(xv, 1)));
    }
    if (cs) cs += d;
  }
}
#endif

// RoPE on n key rows made without it, from `rope`'s cached angles when
// given (the same bits either way).
void rotate_keys(const SyntheticShape& shape, float* k, int64_t n, int64_t first,
                 kernels::RopeTable* rope) {
  if (rope) {
    rope->apply_run(k, n, shape.kv_heads, first);
    return;
  }
  const int64_t row = shape.kv_heads * shape.head_dim;
  for (int64_t t = 0; t < n; ++t)
    kernels::apply_rope(k + t * row, shape.kv_heads, shape.head_dim, first + t, shape.rope_theta,
                        shape.rope_style);
}

}  // namespace

void synthetic_kv_rows(const SyntheticShape& shape, const int32_t* tokens, int64_t n, int64_t first,
                       int64_t layer, float* k, float* v, kernels::RopeTable* rope) {
  const int64_t row = shape.kv_heads * shape.head_dim;
#if defined(__x86_64__)
  if (shape.values_per_hash == 2 && shape.head_dim == 16 && shape.kv_heads % 2 == 0 &&
      kernels::cpu_has_avx512()) {
    const bool table = rope != nullptr && first >= 0;
    kv_pair_rows_avx512_d16(shape, tokens, n, layer, k, v,
                            table ? rope->half_cos_sin(first, n) : nullptr,
                            table && rope->style() == kernels::RopeStyle::adjacent_pairs);
    if (!table) rotate_keys(shape, k, n, first, rope);
    return;
  }
  if (shape.values_per_hash == 2 && kernels::cpu_has_avx2_fma()) {
    kv_pair_rows_avx2(shape, tokens, n, layer, k, v);
    rotate_keys(shape, k, n, first, rope);
    return;
  }
#endif
  for (int64_t t = 0; t < n; ++t) {
    synthetic_rows(shape, Tensor::key, tokens[t], first + t, layer, k + t * row, rope);
    synthetic_rows(shape, Tensor::value, tokens[t], first + t, layer, v + t * row, rope);
  }
}

bool synthetic_kv_rows_stored(const SyntheticShape& shape, const int32_t* tokens, int64_t n,
                              int64_t first, int64_t layer, kernels::RopeTable& rope,
                              kernels::KvDtype dtype, void* k_dst, void* v_dst, float* k_stored,
                              float* v_stored) {
#if defined(__x86_64__)
  if (dtype == kernels::KvDtype::fp16 && shape.values_per_hash == 2 && shape.head_dim == 16 &&
      first >= 0 && !kernels::cpu_has_avx512() && avx2_and_f16c_available()) {
    kv_pair_rows_fp16_avx2_d16(shape, tokens, n, layer, rope.cos_sin(first, n),
                               rope.style() == kernels::RopeStyle::adjacent_pairs,
                               static_cast<uint16_t*>(k_dst), static_cast<uint16_t*>(v_dst),
                               k_stored, v_stored);
    return true;
  }
#endif
  (void)shape, (void)tokens, (void)n, (void)first, (void)layer, (void)rope, (void)dtype;
  (void)k_dst, (void)v_dst, (void)k_stored, (void)v_stored;
  return false;
}

void synthetic_rows(const SyntheticShape& shape, Tensor t, int32_t token, int64_t position,
                    int64_t layer, float* out, kernels::RopeTable* rope) {
  const int64_t heads = t == Tensor::query ? shape.q_heads : shape.kv_heads;
  for (int64_t h = 0; h < heads; ++h) {
    const uint64_t seed = row_seed(t, token, layer, h);
    float* row = out + h * shape.head_dim;
    if (shape.values_per_hash == 2) {
#if defined(__x86_64__)
      if (kernels::cpu_has_avx2_fma()) {
        pair_rows_avx2(seed, row, shape.head_dim);
        continue;
      }
#endif
      pair_rows_scalar(seed, row, 0, shape.head_dim);
      continue;
    }
    if (shape.values_per_hash == 4) {
      for (int64_t c = 0; c < shape.head_dim; c += 4) {
        const uint64_t r = mix64(seed + static_cast<uint64_t>(c));
        for (int64_t j = 0; j < 4 && c + j < shape.head_dim; ++j)
          row[c + j] = static_cast<float>((r >> (16 * j)) & 0xFFFF) * (1.0f / 32768.0f) - 1.0f;
      }
      continue;
    }
    for (int64_t c = 0; c < shape.head_dim; ++c) {
      const uint64_t r = mix64(seed + static_cast<uint64_t>(c));
      row[c] =
          static_cast<float>(static_cast<double>(r >> 40) / static_cast<double>(1ULL << 23) - 1.0);
    }
  }
  // Position enters as the model's RoPE (queries and keys; values carry none).
  if (t == Tensor::value) return;
  if (rope)
    rope->apply(out, heads, position);
  else
    kernels::apply_rope(out, heads, shape.head_dim, position, shape.rope_theta, shape.rope_style);
}

}  // namespace kvsim::numerics
