#pragma once
// Synthetic activations for the numerics checker (SPEC 8): queries, keys
// and values that are a deterministic function of (token id, layer, head)
// and, through RoPE, of position. Two sequences with the same tokens at the
// same positions have the same K/V, so a correct prefix-cache hit carries
// exactly the content a recompute would write, and a block reused for
// different content gives a different attention output.
#include <cstdint>

#include "kernels/kv_dtype.hpp"
#include "kernels/rope.hpp"

namespace kvsim::numerics {

struct SyntheticShape {
  int64_t layers = 2;
  int64_t kv_heads = 2;
  int64_t q_heads = 4;
  int64_t head_dim = 16;
  float rope_theta = 10000.0f;
  kernels::RopeStyle rope_style = kernels::RopeStyle::rotate_half;
  // Values drawn per hash: 1 (one 64-bit hash per value, as `full` has
  // always drawn them), 4 (16 bits each of a 64-bit hash), or 2 (16 bits
  // each of a 32-bit hash per pair of values, eight pairs at once with
  // AVX2, for `sampled`, whose cost budget is a fraction of a run; 16 bits
  // is finer than fp16's mantissa). The same values on every machine.
  int values_per_hash = 1;
};

enum class Tensor : uint32_t { query = 1, key = 2, value = 3 };

// One token's rows for all heads of `layer`: [heads, head_dim] floats
// (heads = q_heads for queries, kv_heads otherwise), values in [-1, 1).
// `rope`, when given, rotates with its cached angles (the same bits).
void synthetic_rows(const SyntheticShape& shape, Tensor t, int32_t token, int64_t position,
                    int64_t layer, float* out, kernels::RopeTable* rope = nullptr);

// Keys and values of n tokens at positions [first, first + n) for `layer`,
// each [n, kv_heads, head_dim]: synthetic_rows' bits, made in one pass.
void synthetic_kv_rows(const SyntheticShape& shape, const int32_t* tokens, int64_t n, int64_t first,
                       int64_t layer, float* k, float* v, kernels::RopeTable* rope = nullptr);

// synthetic_kv_rows' keys and values (rotated with `rope`) as storage in
// `dtype` holds them: the encoded rows into k_dst and v_dst ([n, kv_heads,
// head_dim] elements of the dtype) and what they decode to into k_stored
// and v_stored, without scratch rows, where a fused path exists (fp16, two
// values per hash, heads of 16, a position >= 0, on the AVX2 paths): the
// bits of making the rows, then kernels::encode_row_stored over them.
// Returns false and writes nothing where none does; the caller then makes
// and stores them apart.
bool synthetic_kv_rows_stored(const SyntheticShape& shape, const int32_t* tokens, int64_t n,
                              int64_t first, int64_t layer, kernels::RopeTable& rope,
                              kernels::KvDtype dtype, void* k_dst, void* v_dst, float* k_stored,
                              float* v_stored);

}  // namespace kvsim::numerics
