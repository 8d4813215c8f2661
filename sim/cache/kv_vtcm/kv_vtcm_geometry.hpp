#pragma once
// The KV a placement chooses from, from the on-device buffers' shape
// (sim/cache/genie_policy.hpp): one layer's K and V over ctx_size columns,
// the largest view any AR-n graph reads (seed 002 "Cache Dimension").
#include <stdexcept>

#include "base/checked_math.hpp"
#include "sim/cache/genie_policy.hpp"
#include "sim/cache/kv_vtcm/kv_vtcm_placement.hpp"

namespace kvsim {

inline KvVtcmGeometry kv_vtcm_geometry(const GenieCacheShape& shape) {
  KvVtcmGeometry g;
  g.layers = shape.layers;
  const std::optional<int64_t> per_col =
      checked_mul(2 * shape.kv_heads * shape.head_dim, shape.dtype_bytes);
  const std::optional<int64_t> bytes =
      per_col ? checked_mul(*per_col, shape.ctx_size) : std::nullopt;
  if (!bytes) throw std::invalid_argument("the KV of one layer over ctx_size overflows int64");
  g.layer_bytes = *bytes;
  return g;
}

}  // namespace kvsim
