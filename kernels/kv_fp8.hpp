#pragma once
// fp8 KV-cache storage (OCP 8-bit floats, as vLLM's kv_cache_dtype fp8_e4m3 /
// fp8_e5m2): E4M3 (bias 7, 3 mantissa bits, max 448, no infinity) and E5M2
// (bias 15, 2 mantissa bits, max 57344). Encoding rounds to nearest even and
// saturates at the largest finite value, as scaled fp8 KV caches do; a row
// can carry a scale (amax / max finite) like int8's per-row parameters.
// Kept apart from KvDtype: the engines' dtype list (SPEC 8) is unchanged
// until a pool stores fp8.
#include <cstdint>
#include <string_view>

namespace kvsim::kernels {

enum class Fp8Format : uint8_t { e4m3, e5m2 };

std::string_view fp8_format_name(Fp8Format f);
// Largest finite value of the format: 448 (e4m3), 57344 (e5m2).
float fp8_max_finite(Fp8Format f);
uint8_t float_to_fp8(float x, Fp8Format f);
float fp8_to_float(uint8_t bits, Fp8Format f);

// Scale so the row's largest magnitude maps to the format's largest finite
// value (1 for an all-zero row).
float fp8_row_scale(const float* row, int64_t n, Fp8Format f);
// One scale for a whole tensor (a layer's K or V cache, vLLM's k_scale /
// v_scale): its calibrated largest magnitude over the largest finite value
// (1 for 0). Rows far below the tensor's range then fall among the
// format's subnormals, which a per-row scale avoids.
float fp8_tensor_scale(float tensor_amax, Fp8Format f);
// What a row becomes after fp8 storage and load: x / scale encoded, decoded,
// times scale. scale 1 is vLLM's default unscaled cache.
void fp8_round_trip_row(Fp8Format f, const float* src, int64_t n, float scale, float* dst);

}  // namespace kvsim::kernels
