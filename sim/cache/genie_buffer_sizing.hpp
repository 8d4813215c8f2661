#pragma once
// Bytes of Genie's on-device KV buffers (seed 002), the closed form every
// on-device policy's buffer_bytes() and `kvsim capacity` agree on:
//   per layer, K [kv_heads, head_dim, cols] + V [kv_heads, cols, head_dim]
//   cache:  2 * layers * kv_heads * head_dim * cols * dtype_bytes
//           cols = the mode's row columns: ctx_size (shift_concat,
//                  smart_mask), ctx_size + headroom (pointer_shift;
//                  headroom 0 means ctx_size, the 2x row the kernel uses)
//   output: 2 * layers * kv_heads * head_dim * max_variant * dtype_bytes
//           (the new K/V an AR-n pass writes before the update copies them)
#include <algorithm>
#include <cstdint>
#include <vector>

#include "base/units.hpp"
#include "models/model_spec.hpp"

namespace kvsim {

struct GenieBufferBytes {
  Bytes cache = 0;
  Bytes output = 0;
  Bytes total() const { return cache + output; }
};

// pointer_shift's row: the cache dim plus its headroom (0: ctx_size again).
inline int64_t pointer_shift_row_columns(int64_t ctx_size, int64_t headroom) {
  return ctx_size + (headroom > 0 ? headroom : ctx_size);
}

// `row_columns`: the columns of each cache row (the mode's).
inline GenieBufferBytes genie_buffer_bytes(const ModelSpec& m, int64_t row_columns,
                                           int64_t ctx_size, const std::vector<int64_t>& variants,
                                           Bytes dtype_bytes) {
  const Bytes per_col = m.kv_bytes_per_token(dtype_bytes, 1);  // one HTP: no tensor parallelism
  const int64_t max_variant =
      variants.empty() ? 1 : *std::max_element(variants.begin(), variants.end());
  GenieBufferBytes b;
  b.cache = per_col * row_columns;
  b.output = per_col * std::min(max_variant, ctx_size);
  return b;
}

}  // namespace kvsim
