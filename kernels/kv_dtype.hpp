#pragma once
// KV storage element types (SPEC 8: fp32 compute on fp32/fp16/bf16/int8
// storage). fp16 and bf16 round to nearest even through Eigen's types; int8
// is asymmetric per (token, head) row as Qualcomm QNN stores it (seed 002):
// real = scale * (q + offset), q an unsigned byte, offset <= 0, so the byte
// that means 0.0 is -offset, which Genie uses as its pad value.
#include <cstdint>
#include <optional>
#include <string>
#include <string_view>
#include <vector>

namespace kvsim::kernels {

// fp8_e4m3 / fp8_e5m2 (vLLM's kv_cache_dtype fp8 = fp8_e4m3, and fp8_e5m2)
// carry one scale per stored row (token and head), amax / max finite, in
// Int8Params::scale (offset 0): kernels/kv_fp8.hpp.
enum class KvDtype : uint8_t { fp32, fp16, bf16, int8, fp8_e4m3, fp8_e5m2 };

int64_t kv_dtype_bytes(KvDtype t);
// Whether a stored row carries its own Int8Params (int8, fp8).
bool kv_dtype_has_row_params(KvDtype t);
std::string_view kv_dtype_name(KvDtype t);
// Accepts every kv_dtype_name and vLLM's `fp8` (= fp8_e4m3).
std::optional<KvDtype> parse_kv_dtype(std::string_view name);
std::vector<std::string> kv_dtype_names();

uint16_t float_to_half_bits(float x);
float half_bits_to_float(uint16_t h);
uint16_t float_to_bf16_bits(float x);
float bf16_bits_to_float(uint16_t h);

// Quantisation parameters of one int8 row (seed 002: pad value = -offset).
struct Int8Params {
  float scale = 1.0f;
  int32_t offset = 0;  // in [-255, 0]
  uint8_t pad_value() const { return static_cast<uint8_t>(-offset); }
};
// Parameters covering [min(row, 0), max(row, 0)] so 0.0 is exact.
Int8Params int8_params_for(const float* row, int64_t n);
uint8_t quantize_int8(float x, const Int8Params& p);
inline float dequantize_int8(uint8_t q, const Int8Params& p) {
  return p.scale * (static_cast<float>(q) + static_cast<float>(p.offset));
}

// Encodes n floats into `dst` (kv_dtype_bytes each); for int8 also returns
// the row's parameters. Decodes back to fp32. `fp8_tensor_scale` > 0: fp8
// rows use that one scale (per tensor) instead of their own amax (per
// token and head); other dtypes ignore it.
Int8Params encode_row(KvDtype t, const float* src, int64_t n, void* dst,
                      float fp8_tensor_scale = 0.0f);
void decode_row(KvDtype t, const void* src, int64_t n, const Int8Params& p, float* dst);
// encode_row, and what the encoded row decodes to into `stored` (one pass
// for fp16 with F16C).
Int8Params encode_row_stored(KvDtype t, const float* src, int64_t n, void* dst, float* stored,
                             float fp8_tensor_scale = 0.0f);
// What a value becomes after storage and load: encode then decode.
void round_trip_row(KvDtype t, const float* src, int64_t n, float* dst,
                    float fp8_tensor_scale = 0.0f);

}  // namespace kvsim::kernels
