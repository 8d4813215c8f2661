#include "sim/numerics/synthetic_kv.hpp"

namespace kvsim::numerics {
namespace {

uint64_t splitmix64(uint64_t x) {
  x += 0x9E3779B97F4A7C15ULL;
  x = (x ^ (x >> 30)) * 0xBF58476D1CE4E5B9ULL;
  x = (x ^ (x >> 27)) * 0x94D049BB133111EBULL;
  return x ^ (x >> 31);
}

}  // namespace

void synthetic_rows(const SyntheticShape& shape, Tensor t, int32_t token, int64_t position,
                    int64_t layer, float* out, kernels::RopeTable* rope) {
  const int64_t heads = t == Tensor::query ? shape.q_heads : shape.kv_heads;
  for (int64_t h = 0; h < heads; ++h) {
    const uint64_t seed = splitmix64((static_cast<uint64_t>(static_cast<uint32_t>(token)) << 20) ^
                                     (static_cast<uint64_t>(layer) << 12) ^
                                     (static_cast<uint64_t>(h) << 4) ^ static_cast<uint64_t>(t));
    float* row = out + h * shape.head_dim;
    if (shape.values_per_hash == 4) {
      for (int64_t c = 0; c < shape.head_dim; c += 4) {
        const uint64_t r = splitmix64(seed + static_cast<uint64_t>(c));
        for (int64_t j = 0; j < 4 && c + j < shape.head_dim; ++j)
          row[c + j] = static_cast<float>((r >> (16 * j)) & 0xFFFF) * (1.0f / 32768.0f) - 1.0f;
      }
      continue;
    }
    for (int64_t c = 0; c < shape.head_dim; ++c) {
      const uint64_t r = splitmix64(seed + static_cast<uint64_t>(c));
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
