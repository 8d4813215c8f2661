#include "sim/numerics/synthetic_kv.hpp"

#include "workloads/rng.hpp"

#if defined(__x86_64__)
#include <immintrin.h>
#endif

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
// The same, eight lanes (sixteen values) at a time; integer hashing and an
// exact scaling by 2^-15, so the values are bit for bit the scalar ones.
__attribute__((target("avx2,fma"), always_inline)) inline void pair_rows_inline(uint64_t seed,
                                                                                float* row,
                                                                                int64_t d) {
  const auto lo = static_cast<uint32_t>(seed), hi = static_cast<uint32_t>(seed >> 32);
  const __m256i step = _mm256_mullo_epi32(_mm256_setr_epi32(0, 1, 2, 3, 4, 5, 6, 7),
                                          _mm256_set1_epi32(static_cast<int>(kLaneStep)));
  const __m256i m1 = _mm256_set1_epi32(0x7feb352d), m2 = _mm256_set1_epi32(0x846ca68b);
  const __m256 scale = _mm256_set1_ps(1.0f / 32768.0f), one = _mm256_set1_ps(1.0f);
  int64_t c = 0;
  for (; c + 16 <= d; c += 16) {
    const auto base = lo + static_cast<uint32_t>(c / 2) * kLaneStep;
    __m256i x = _mm256_xor_si256(_mm256_add_epi32(_mm256_set1_epi32(static_cast<int>(base)), step),
                                 _mm256_set1_epi32(static_cast<int>(hi)));
    x = _mm256_xor_si256(x, _mm256_srli_epi32(x, 16));
    x = _mm256_mullo_epi32(x, m1);
    x = _mm256_xor_si256(x, _mm256_srli_epi32(x, 15));
    x = _mm256_mullo_epi32(x, m2);
    x = _mm256_xor_si256(x, _mm256_srli_epi32(x, 16));
    // Lane i's low and high halves are 16-bit words 2i and 2i + 1 of the
    // vector, already in value order: widened in two runs of eight. r *
    // 2^-15 - 1 is exact in float (16 significant bits), fused or not.
    const __m256 lo8 = _mm256_cvtepi32_ps(_mm256_cvtepu16_epi32(_mm256_castsi256_si128(x)));
    const __m256 hi8 = _mm256_cvtepi32_ps(_mm256_cvtepu16_epi32(_mm256_extracti128_si256(x, 1)));
    _mm256_storeu_ps(row + c, _mm256_fmsub_ps(lo8, scale, one));
    _mm256_storeu_ps(row + c + 8, _mm256_fmsub_ps(hi8, scale, one));
  }
  pair_rows_scalar(seed, row, c, d);
}

__attribute__((target("avx2,fma"))) void pair_rows_avx2(uint64_t seed, float* row, int64_t d) {
  pair_rows_inline(seed, row, d);
}

bool avx2_available() {
  static const bool ok = __builtin_cpu_supports("avx2") && __builtin_cpu_supports("fma");
  return ok;
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

}  // namespace

void synthetic_kv_rows(const SyntheticShape& shape, const int32_t* tokens, int64_t n, int64_t first,
                       int64_t layer, float* k, float* v, kernels::RopeTable* rope) {
  const int64_t row = shape.kv_heads * shape.head_dim;
#if defined(__x86_64__)
  if (shape.values_per_hash == 2 && avx2_available()) {
    kv_pair_rows_avx2(shape, tokens, n, layer, k, v);
    if (rope) {
      rope->apply_run(k, n, shape.kv_heads, first);
      return;
    }
    for (int64_t t = 0; t < n; ++t)
      kernels::apply_rope(k + t * row, shape.kv_heads, shape.head_dim, first + t, shape.rope_theta,
                          shape.rope_style);
    return;
  }
#endif
  for (int64_t t = 0; t < n; ++t) {
    synthetic_rows(shape, Tensor::key, tokens[t], first + t, layer, k + t * row, rope);
    synthetic_rows(shape, Tensor::value, tokens[t], first + t, layer, v + t * row, rope);
  }
}

void synthetic_rows(const SyntheticShape& shape, Tensor t, int32_t token, int64_t position,
                    int64_t layer, float* out, kernels::RopeTable* rope) {
  const int64_t heads = t == Tensor::query ? shape.q_heads : shape.kv_heads;
  for (int64_t h = 0; h < heads; ++h) {
    const uint64_t seed = row_seed(t, token, layer, h);
    float* row = out + h * shape.head_dim;
    if (shape.values_per_hash == 2) {
#if defined(__x86_64__)
      if (avx2_available()) {
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
