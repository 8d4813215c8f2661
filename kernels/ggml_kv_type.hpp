#pragma once
// llama.cpp's K/V cache element types (seed 004: `type_k` / `type_v`, F16 by
// default, quantized ggml types allowed). Sizes are ggml's: a type stores
// blocks of `block_values` values in `block_bytes` bytes, so a row of n
// values takes n / block_values * block_bytes (ggml_row_size). The
// block-quantized types hold 32 values with an fp16 scale d (and an fp16
// min m for the `_1` types):
//   q8_0: d + 32 int8                        34 bytes  x = d * q
//   q4_0: d + 16 bytes of nibbles            18 bytes  x = d * (q - 8)
//   q4_1: d, m + 16 bytes of nibbles         20 bytes  x = d * q + m
//   q5_0: d + 4 bytes of high bits + 16      22 bytes  x = d * (q - 16)
//   q5_1: d, m + 4 + 16                      24 bytes  x = d * q + m
// The encoders follow ggml's reference quantizers (quantize_row_*_ref), so
// the values a cell holds are the ones llama.cpp would hold.
#include <cstdint>
#include <optional>
#include <string>
#include <string_view>
#include <vector>

namespace kvsim::kernels {

enum class GgmlType : uint8_t { f32, f16, bf16, q8_0, q4_0, q4_1, q5_0, q5_1 };

struct GgmlTypeTraits {
  std::string_view name;
  int64_t block_values;  // values per block (1 for the float types)
  int64_t block_bytes;   // bytes per block
  bool quantized;
};

const GgmlTypeTraits& ggml_type_traits(GgmlType t);
std::optional<GgmlType> parse_ggml_type(std::string_view name);
std::vector<std::string> ggml_type_names();

// ggml_row_size: bytes of `n` values; n must be a multiple of the block
// (throws std::invalid_argument otherwise, as ggml asserts).
int64_t ggml_row_bytes(GgmlType t, int64_t n);

// Encodes n values (a multiple of the block) into `dst` (ggml_row_bytes of
// them) and decodes them back.
void ggml_encode_row(GgmlType t, const float* src, int64_t n, uint8_t* dst);
void ggml_decode_row(GgmlType t, const uint8_t* src, int64_t n, float* dst);
// One value of a float type at element index i (the strided reads of a
// transposed V cache); throws std::invalid_argument for a quantized type.
float ggml_load_value(GgmlType t, const uint8_t* row, int64_t i);
void ggml_store_value(GgmlType t, uint8_t* row, int64_t i, float x);

}  // namespace kvsim::kernels
