#include "kernels/kv_fp8.hpp"

#include <algorithm>
#include <cmath>

namespace kvsim::kernels {

namespace {

struct Fp8Spec {
  int exponent_bias;
  int mantissa_bits;
  uint8_t max_finite_bits;  // sign bit clear
};

// E4M3: 0x7E = exponent 15, mantissa 110 = 1.75 * 2^8 = 448 (0x7F is NaN).
// E5M2: 0x7B = exponent 30, mantissa 11 = 1.75 * 2^15 = 57344 (exponent 31 is inf/NaN).
Fp8Spec spec_of(Fp8Format f) {
  return f == Fp8Format::e4m3 ? Fp8Spec{7, 3, 0x7E} : Fp8Spec{15, 2, 0x7B};
}

float decode_magnitude(uint8_t bits, const Fp8Spec& s) {
  const int man_mask = (1 << s.mantissa_bits) - 1;
  const int e = bits >> s.mantissa_bits;
  const int m = bits & man_mask;
  if (e == 0) return std::ldexp(static_cast<float>(m), 1 - s.exponent_bias - s.mantissa_bits);
  return std::ldexp(1.0f + static_cast<float>(m) / static_cast<float>(1 << s.mantissa_bits),
                    e - s.exponent_bias);
}

}  // namespace

std::string_view fp8_format_name(Fp8Format f) {
  return f == Fp8Format::e4m3 ? "fp8_e4m3" : "fp8_e5m2";
}

float fp8_max_finite(Fp8Format f) {
  return decode_magnitude(spec_of(f).max_finite_bits, spec_of(f));
}

uint8_t float_to_fp8(float x, Fp8Format f) {
  const Fp8Spec s = spec_of(f);
  const uint8_t sign = std::signbit(x) ? 0x80 : 0x00;
  if (std::isnan(x)) return 0x7F;  // a NaN pattern in both formats
  const float a = std::fabs(x);
  if (a >= decode_magnitude(s.max_finite_bits, s)) return sign | s.max_finite_bits;
  const int min_normal_exp = 1 - s.exponent_bias;
  if (a < std::ldexp(1.0f, min_normal_exp)) {
    // Subnormal: multiples of 2^(1 - bias - mantissa_bits); rounding up to
    // 2^mantissa_bits lands on the smallest normal's encoding, as it should.
    const float q = std::nearbyint(std::ldexp(a, s.exponent_bias - 1 + s.mantissa_bits));
    return sign | static_cast<uint8_t>(q);
  }
  int e = 0;
  std::frexp(a, &e);  // a = f * 2^e, f in [0.5, 1)
  const int unbiased = e - 1;
  const float mantissa = std::ldexp(a, -unbiased) - 1.0f;  // [0, 1)
  int m = static_cast<int>(std::nearbyint(std::ldexp(mantissa, s.mantissa_bits)));
  int biased = unbiased + s.exponent_bias;
  if (m == (1 << s.mantissa_bits)) {
    m = 0;
    ++biased;
  }
  const int bits = (biased << s.mantissa_bits) | m;
  return sign | static_cast<uint8_t>(std::min<int>(bits, s.max_finite_bits));
}

float fp8_to_float(uint8_t bits, Fp8Format f) {
  const Fp8Spec s = spec_of(f);
  const auto magnitude_bits = static_cast<uint8_t>(bits & 0x7F);
  if (f == Fp8Format::e4m3 && magnitude_bits == 0x7F) return std::nanf("");
  if (f == Fp8Format::e5m2 && (magnitude_bits >> 2) == 31)
    return (magnitude_bits & 3) ? std::nanf("") : ((bits & 0x80) ? -INFINITY : INFINITY);
  const float v = decode_magnitude(magnitude_bits, s);
  return (bits & 0x80) ? -v : v;
}

float fp8_row_scale(const float* row, int64_t n, Fp8Format f) {
  float amax = 0.0f;
  for (int64_t i = 0; i < n; ++i) amax = std::max(amax, std::fabs(row[i]));
  return amax > 0.0f ? amax / fp8_max_finite(f) : 1.0f;
}

float fp8_tensor_scale(float tensor_amax, Fp8Format f) {
  return tensor_amax > 0.0f ? tensor_amax / fp8_max_finite(f) : 1.0f;
}

void fp8_round_trip_row(Fp8Format f, const float* src, int64_t n, float scale, float* dst) {
  for (int64_t i = 0; i < n; ++i) dst[i] = fp8_to_float(float_to_fp8(src[i] / scale, f), f) * scale;
}

}  // namespace kvsim::kernels
