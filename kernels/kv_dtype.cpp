#include "kernels/kv_dtype.hpp"

#include <Eigen/Core>
#include <algorithm>
#include <bit>
#include <cmath>
#include <cstring>

#include "kernels/cpu_features.hpp"
#include "kernels/kv_fp8.hpp"

#if defined(__x86_64__)
// GCC 12's AVX-512 intrinsics pass an uninitialised operand where all
// lanes are written, which -Wmaybe-uninitialized reports from the header.
#pragma GCC diagnostic push
#pragma GCC diagnostic ignored "-Wmaybe-uninitialized"
#include <immintrin.h>
#pragma GCC diagnostic pop
#endif

namespace kvsim::kernels {

int64_t kv_dtype_bytes(KvDtype t) {
  switch (t) {
    case KvDtype::fp32:
      return 4;
    case KvDtype::fp16:
    case KvDtype::bf16:
      return 2;
    case KvDtype::int8:
    case KvDtype::fp8_e4m3:
    case KvDtype::fp8_e5m2:
      return 1;
  }
  return 0;
}

bool kv_dtype_has_row_params(KvDtype t) {
  return t == KvDtype::int8 || t == KvDtype::fp8_e4m3 || t == KvDtype::fp8_e5m2;
}

std::string_view kv_dtype_name(KvDtype t) {
  switch (t) {
    case KvDtype::fp32:
      return "fp32";
    case KvDtype::fp16:
      return "fp16";
    case KvDtype::bf16:
      return "bf16";
    case KvDtype::int8:
      return "int8";
    case KvDtype::fp8_e4m3:
      return "fp8_e4m3";
    case KvDtype::fp8_e5m2:
      return "fp8_e5m2";
  }
  return "?";
}

std::optional<KvDtype> parse_kv_dtype(std::string_view name) {
  if (name == "fp8") return KvDtype::fp8_e4m3;
  for (KvDtype t : {KvDtype::fp32, KvDtype::fp16, KvDtype::bf16, KvDtype::int8, KvDtype::fp8_e4m3,
                    KvDtype::fp8_e5m2}) {
    if (kv_dtype_name(t) == name) return t;
  }
  return std::nullopt;
}

std::vector<std::string> kv_dtype_names() {
  return {"fp32", "fp16", "bf16", "int8", "fp8", "fp8_e4m3", "fp8_e5m2"};
}

namespace {
Fp8Format fp8_format_of(KvDtype t) {
  return t == KvDtype::fp8_e5m2 ? Fp8Format::e5m2 : Fp8Format::e4m3;
}
}  // namespace

uint16_t float_to_half_bits(float x) {
  return Eigen::numext::bit_cast<uint16_t>(Eigen::half(x));
}
float half_bits_to_float(uint16_t h) {
  return static_cast<float>(Eigen::numext::bit_cast<Eigen::half>(h));
}
uint16_t float_to_bf16_bits(float x) {
  return Eigen::numext::bit_cast<uint16_t>(Eigen::bfloat16(x));
}
float bf16_bits_to_float(uint16_t h) {
  return std::bit_cast<float>(static_cast<uint32_t>(h) << 16);
}

namespace {
// fp16 rows eight values at a time with F16C where the machine has it:
// round to nearest even like Eigen::half, so the bits are the same either way.
#if defined(__x86_64__)
bool f16c_available() {
  static const bool ok = __builtin_cpu_supports("avx") && cpu_has_f16c();
  return ok;
}
__attribute__((target("avx,f16c"))) void encode_half_f16c(const float* src, int64_t n,
                                                          uint16_t* dst) {
  int64_t i = 0;
  for (; i + 8 <= n; i += 8)
    _mm_storeu_si128(reinterpret_cast<__m128i*>(dst + i),
                     _mm256_cvtps_ph(_mm256_loadu_ps(src + i), _MM_FROUND_TO_NEAREST_INT));
  for (; i < n; ++i) dst[i] = float_to_half_bits(src[i]);
}
// Both at once: the encoded bits to dst, what they decode to to `stored`.
__attribute__((target("avx,f16c"))) void encode_decode_half_f16c(const float* src, int64_t n,
                                                                 uint16_t* dst, float* stored) {
  int64_t i = 0;
  for (; i + 8 <= n; i += 8) {
    const __m128i h = _mm256_cvtps_ph(_mm256_loadu_ps(src + i), _MM_FROUND_TO_NEAREST_INT);
    _mm_storeu_si128(reinterpret_cast<__m128i*>(dst + i), h);
    _mm256_storeu_ps(stored + i, _mm256_cvtph_ps(h));
  }
  for (; i < n; ++i) {
    dst[i] = float_to_half_bits(src[i]);
    stored[i] = half_bits_to_float(dst[i]);
  }
}
// The same sixteen values at a time with AVX-512 (the same conversion per
// value), the rest eight at a time.
__attribute__((target("avx512f,avx512vl,f16c"))) void encode_decode_half_avx512(const float* src,
                                                                                int64_t n,
                                                                                uint16_t* dst,
                                                                                float* stored) {
  int64_t i = 0;
  for (; i + 16 <= n; i += 16) {
    const __m256i h = _mm512_cvtps_ph(_mm512_loadu_ps(src + i), _MM_FROUND_TO_NEAREST_INT);
    _mm256_storeu_si256(reinterpret_cast<__m256i*>(dst + i), h);
    _mm512_storeu_ps(stored + i, _mm512_cvtph_ps(h));
  }
  encode_decode_half_f16c(src + i, n - i, dst + i, stored + i);
}
__attribute__((target("avx,f16c"))) void decode_half_f16c(const uint16_t* src, int64_t n,
                                                          float* dst) {
  int64_t i = 0;
  for (; i + 8 <= n; i += 8)
    _mm256_storeu_ps(dst + i,
                     _mm256_cvtph_ps(_mm_loadu_si128(reinterpret_cast<const __m128i*>(src + i))));
  for (; i < n; ++i) dst[i] = half_bits_to_float(src[i]);
}
#else
bool f16c_available() {
  return false;
}
void encode_decode_half_f16c(const float*, int64_t, uint16_t*, float*) {}
void encode_decode_half_avx512(const float*, int64_t, uint16_t*, float*) {}
void encode_half_f16c(const float*, int64_t, uint16_t*) {}
void decode_half_f16c(const uint16_t*, int64_t, float*) {}
#endif
}  // namespace

Int8Params int8_params_for(const float* row, int64_t n) {
  float lo = 0.0f, hi = 0.0f;
  for (int64_t i = 0; i < n; ++i) {
    lo = std::min(lo, row[i]);
    hi = std::max(hi, row[i]);
  }
  Int8Params p;
  p.scale = hi > lo ? (hi - lo) / 255.0f : 1.0f;
  p.offset = static_cast<int32_t>(std::lround(lo / p.scale));
  p.offset = std::clamp(p.offset, -255, 0);
  return p;
}

uint8_t quantize_int8(float x, const Int8Params& p) {
  const long q = std::lround(x / p.scale) - p.offset;
  return static_cast<uint8_t>(std::clamp<long>(q, 0, 255));
}

Int8Params encode_row(KvDtype t, const float* src, int64_t n, void* dst, float fp8_tensor_scale) {
  Int8Params p;
  switch (t) {
    case KvDtype::fp32:
      std::memcpy(dst, src, static_cast<size_t>(n) * 4);
      break;
    case KvDtype::fp16: {
      auto* d = static_cast<uint16_t*>(dst);
      if (f16c_available()) {
        encode_half_f16c(src, n, d);
        break;
      }
      for (int64_t i = 0; i < n; ++i) d[i] = float_to_half_bits(src[i]);
      break;
    }
    case KvDtype::bf16: {
      auto* d = static_cast<uint16_t*>(dst);
      for (int64_t i = 0; i < n; ++i) d[i] = float_to_bf16_bits(src[i]);
      break;
    }
    case KvDtype::int8: {
      p = int8_params_for(src, n);
      auto* d = static_cast<uint8_t*>(dst);
      for (int64_t i = 0; i < n; ++i) d[i] = quantize_int8(src[i], p);
      break;
    }
    case KvDtype::fp8_e4m3:
    case KvDtype::fp8_e5m2: {
      const Fp8Format f = fp8_format_of(t);
      p.scale = fp8_tensor_scale > 0.0f ? fp8_tensor_scale : fp8_row_scale(src, n, f);
      auto* d = static_cast<uint8_t*>(dst);
      for (int64_t i = 0; i < n; ++i) d[i] = float_to_fp8(src[i] / p.scale, f);
      break;
    }
  }
  return p;
}

void decode_row(KvDtype t, const void* src, int64_t n, const Int8Params& p, float* dst) {
  switch (t) {
    case KvDtype::fp32:
      std::memcpy(dst, src, static_cast<size_t>(n) * 4);
      break;
    case KvDtype::fp16: {
      const auto* s = static_cast<const uint16_t*>(src);
      if (f16c_available()) {
        decode_half_f16c(s, n, dst);
        break;
      }
      for (int64_t i = 0; i < n; ++i) dst[i] = half_bits_to_float(s[i]);
      break;
    }
    case KvDtype::bf16: {
      const auto* s = static_cast<const uint16_t*>(src);
      for (int64_t i = 0; i < n; ++i) dst[i] = bf16_bits_to_float(s[i]);
      break;
    }
    case KvDtype::int8: {
      const auto* s = static_cast<const uint8_t*>(src);
      for (int64_t i = 0; i < n; ++i) dst[i] = dequantize_int8(s[i], p);
      break;
    }
    case KvDtype::fp8_e4m3:
    case KvDtype::fp8_e5m2: {
      const auto* s = static_cast<const uint8_t*>(src);
      for (int64_t i = 0; i < n; ++i) dst[i] = fp8_to_float(s[i], fp8_format_of(t)) * p.scale;
      break;
    }
  }
}

Int8Params encode_row_stored(KvDtype t, const float* src, int64_t n, void* dst, float* stored,
                             float fp8_tensor_scale) {
  if (t == KvDtype::fp16 && f16c_available()) {
    if (n >= 16 && cpu_has_avx512())
      encode_decode_half_avx512(src, n, static_cast<uint16_t*>(dst), stored);
    else
      encode_decode_half_f16c(src, n, static_cast<uint16_t*>(dst), stored);
    return Int8Params{};
  }
  const Int8Params p = encode_row(t, src, n, dst, fp8_tensor_scale);
  decode_row(t, dst, n, p, stored);
  return p;
}

void round_trip_row(KvDtype t, const float* src, int64_t n, float* dst, float fp8_tensor_scale) {
  // Rows of up to 256 values go through the stack: no allocation per row.
  alignas(32) uint8_t stack[1024];
  std::vector<uint8_t> heap;
  uint8_t* tmp = stack;
  if (n * 4 > static_cast<int64_t>(sizeof stack)) {
    heap.resize(static_cast<size_t>(n * 4));
    tmp = heap.data();
  }
  const Int8Params p = encode_row(t, src, n, tmp, fp8_tensor_scale);
  decode_row(t, tmp, n, p, dst);
}

}  // namespace kvsim::kernels
