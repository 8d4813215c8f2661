#include "kernels/ggml_kv_type.hpp"

#include <fmt/format.h>

#include <algorithm>
#include <array>
#include <cmath>
#include <cstring>
#include <stdexcept>

#include "kernels/kv_dtype.hpp"

namespace kvsim::kernels {
namespace {

constexpr int64_t kQk = 32;  // values per block of every quantized type (QK4_0 .. QK8_0)

// ggml.c's type_traits: block size and type size.
constexpr std::array<GgmlTypeTraits, 8> kTraits = {{
    {"f32", 1, 4, false},
    {"f16", 1, 2, false},
    {"bf16", 1, 2, false},
    {"q8_0", kQk, 2 + kQk, true},
    {"q4_0", kQk, 2 + kQk / 2, true},
    {"q4_1", kQk, 4 + kQk / 2, true},
    {"q5_0", kQk, 2 + 4 + kQk / 2, true},
    {"q5_1", kQk, 4 + 4 + kQk / 2, true},
}};

void put_half(uint8_t* dst, float x) {
  const uint16_t h = float_to_half_bits(x);
  std::memcpy(dst, &h, 2);
}
float get_half(const uint8_t* src) {
  uint16_t h = 0;
  std::memcpy(&h, src, 2);
  return half_bits_to_float(h);
}

// The value of largest magnitude, with its sign (q4_0, q5_0).
float signed_absmax(const float* x) {
  float amax = 0, max = 0;
  for (int64_t j = 0; j < kQk; ++j)
    if (amax < std::fabs(x[j])) {
      amax = std::fabs(x[j]);
      max = x[j];
    }
  return max;
}

void encode_block(GgmlType t, const float* x, uint8_t* y) {
  switch (t) {
    case GgmlType::q8_0: {
      float amax = 0;
      for (int64_t j = 0; j < kQk; ++j) amax = std::max(amax, std::fabs(x[j]));
      const float d = amax / 127.0f;
      const float id = d != 0 ? 1.0f / d : 0.0f;
      put_half(y, d);
      for (int64_t j = 0; j < kQk; ++j)
        y[2 + j] = static_cast<uint8_t>(static_cast<int8_t>(std::roundf(x[j] * id)));
      return;
    }
    case GgmlType::q4_0:
    case GgmlType::q5_0: {
      const bool five = t == GgmlType::q5_0;
      const float d = signed_absmax(x) / (five ? -16.0f : -8.0f);
      const float id = d != 0 ? 1.0f / d : 0.0f;
      const float bias = five ? 16.5f : 8.5f;
      const int top = five ? 31 : 15;
      put_half(y, d);
      uint8_t* qs = y + (five ? 6 : 2);
      uint32_t qh = 0;
      for (int64_t j = 0; j < kQk / 2; ++j) {
        const int q0 = std::min(top, static_cast<int>(static_cast<int8_t>(x[j] * id + bias)));
        const int q1 =
            std::min(top, static_cast<int>(static_cast<int8_t>(x[j + kQk / 2] * id + bias)));
        qs[j] = static_cast<uint8_t>((q0 & 0x0F) | ((q1 & 0x0F) << 4));
        qh |= static_cast<uint32_t>((q0 & 0x10) >> 4) << j;
        qh |= static_cast<uint32_t>((q1 & 0x10) >> 4) << (j + kQk / 2);
      }
      if (five) std::memcpy(y + 2, &qh, 4);
      return;
    }
    case GgmlType::q4_1:
    case GgmlType::q5_1: {
      const bool five = t == GgmlType::q5_1;
      float lo = x[0], hi = x[0];
      for (int64_t j = 1; j < kQk; ++j) {
        lo = std::min(lo, x[j]);
        hi = std::max(hi, x[j]);
      }
      const float d = (hi - lo) / (five ? 31.0f : 15.0f);
      const float id = d != 0 ? 1.0f / d : 0.0f;
      put_half(y, d);
      put_half(y + 2, lo);
      uint8_t* qs = y + (five ? 8 : 4);
      uint32_t qh = 0;
      for (int64_t j = 0; j < kQk / 2; ++j) {
        int q0 = static_cast<int>(static_cast<int8_t>((x[j] - lo) * id + 0.5f));
        int q1 = static_cast<int>(static_cast<int8_t>((x[j + kQk / 2] - lo) * id + 0.5f));
        if (!five) {
          q0 = std::min(15, q0);
          q1 = std::min(15, q1);
        }
        qs[j] = static_cast<uint8_t>((q0 & 0x0F) | ((q1 & 0x0F) << 4));
        qh |= static_cast<uint32_t>((q0 & 0x10) >> 4) << j;
        qh |= static_cast<uint32_t>((q1 & 0x10) >> 4) << (j + kQk / 2);
      }
      if (five) std::memcpy(y + 4, &qh, 4);
      return;
    }
    default:
      throw std::logic_error("encode_block: not a quantized type");
  }
}

void decode_block(GgmlType t, const uint8_t* y, float* x) {
  const float d = get_half(y);
  switch (t) {
    case GgmlType::q8_0:
      for (int64_t j = 0; j < kQk; ++j)
        x[j] = d * static_cast<float>(static_cast<int8_t>(y[2 + j]));
      return;
    case GgmlType::q4_0:
    case GgmlType::q4_1:
    case GgmlType::q5_0:
    case GgmlType::q5_1: {
      const bool five = t == GgmlType::q5_0 || t == GgmlType::q5_1;
      const bool with_min = t == GgmlType::q4_1 || t == GgmlType::q5_1;
      const float m = with_min ? get_half(y + 2) : 0.0f;
      const int64_t head = (with_min ? 4 : 2) + (five ? 4 : 0);
      uint32_t qh = 0;
      if (five) std::memcpy(&qh, y + head - 4, 4);
      const int zero = with_min ? 0 : (five ? 16 : 8);
      for (int64_t j = 0; j < kQk / 2; ++j) {
        int q0 = y[head + j] & 0x0F, q1 = y[head + j] >> 4;
        if (five) {
          q0 |= static_cast<int>(((qh >> j) << 4) & 0x10);
          q1 |= static_cast<int>((qh >> (j + 12)) & 0x10);
        }
        x[j] = static_cast<float>(q0 - zero) * d + m;
        x[j + kQk / 2] = static_cast<float>(q1 - zero) * d + m;
      }
      return;
    }
    default:
      throw std::logic_error("decode_block: not a quantized type");
  }
}

}  // namespace

const GgmlTypeTraits& ggml_type_traits(GgmlType t) {
  return kTraits[static_cast<size_t>(t)];
}

std::optional<GgmlType> parse_ggml_type(std::string_view name) {
  for (size_t i = 0; i < kTraits.size(); ++i)
    if (kTraits[i].name == name) return static_cast<GgmlType>(i);
  return std::nullopt;
}

std::vector<std::string> ggml_type_names() {
  std::vector<std::string> names;
  for (const auto& t : kTraits) names.emplace_back(t.name);
  return names;
}

int64_t ggml_row_bytes(GgmlType t, int64_t n) {
  const GgmlTypeTraits& tr = ggml_type_traits(t);
  if (n < 0 || n % tr.block_values != 0)
    throw std::invalid_argument(
        fmt::format("{} stores blocks of {} values; a row of {} is not whole blocks", tr.name,
                    tr.block_values, n));
  return n / tr.block_values * tr.block_bytes;
}

float ggml_load_value(GgmlType t, const uint8_t* row, int64_t i) {
  switch (t) {
    case GgmlType::f32: {
      float x = 0;
      std::memcpy(&x, row + 4 * i, 4);
      return x;
    }
    case GgmlType::f16:
      return get_half(row + 2 * i);
    case GgmlType::bf16: {
      uint16_t h = 0;
      std::memcpy(&h, row + 2 * i, 2);
      return bf16_bits_to_float(h);
    }
    default:
      throw std::invalid_argument(
          fmt::format("{} has no single-value access (a transposed V cache needs a float type)",
                      ggml_type_traits(t).name));
  }
}

void ggml_store_value(GgmlType t, uint8_t* row, int64_t i, float x) {
  switch (t) {
    case GgmlType::f32:
      std::memcpy(row + 4 * i, &x, 4);
      return;
    case GgmlType::f16:
      put_half(row + 2 * i, x);
      return;
    case GgmlType::bf16: {
      const uint16_t h = float_to_bf16_bits(x);
      std::memcpy(row + 2 * i, &h, 2);
      return;
    }
    default:
      throw std::invalid_argument(
          fmt::format("{} has no single-value access (a transposed V cache needs a float type)",
                      ggml_type_traits(t).name));
  }
}

void ggml_encode_row(GgmlType t, const float* src, int64_t n, uint8_t* dst) {
  const GgmlTypeTraits& tr = ggml_type_traits(t);
  (void)ggml_row_bytes(t, n);  // whole blocks
  if (!tr.quantized) {
    for (int64_t i = 0; i < n; ++i) ggml_store_value(t, dst, i, src[i]);
    return;
  }
  for (int64_t b = 0; b < n / kQk; ++b) encode_block(t, src + b * kQk, dst + b * tr.block_bytes);
}

void ggml_decode_row(GgmlType t, const uint8_t* src, int64_t n, float* dst) {
  const GgmlTypeTraits& tr = ggml_type_traits(t);
  (void)ggml_row_bytes(t, n);
  if (!tr.quantized) {
    for (int64_t i = 0; i < n; ++i) dst[i] = ggml_load_value(t, src, i);
    return;
  }
  for (int64_t b = 0; b < n / kQk; ++b) decode_block(t, src + b * tr.block_bytes, dst + b * kQk);
}

}  // namespace kvsim::kernels
