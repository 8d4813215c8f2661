#include <stdexcept>

#include "sim/cache/kv_vtcm/kv_vtcm_placement.hpp"

namespace kvsim {

KvVtcmPlan kv_vtcm_plan(int64_t layers, KvVtcmPart part, Bytes window, const KvVtcmGeometry& g) {
  if (layers < 0 || layers > g.layers || window < 0)
    throw std::invalid_argument("kv_vtcm_plan: layers outside 0..model layers or window < 0");
  KvVtcmPlan p;
  p.layers = layers;
  p.kv_bytes = layers * kv_vtcm_unit_bytes(g, part);  // <= window: the callers fit it
  if (p.kv_bytes > window) throw std::logic_error("kv_vtcm_plan: the KV does not fit the window");
  p.graph_bytes = window - p.kv_bytes;
  const double fraction = part == KvVtcmPart::keys ? 0.5 : 1.0;
  p.share =
      g.layers > 0 ? fraction * static_cast<double>(layers) / static_cast<double>(g.layers) : 0.0;
  return p;
}

}  // namespace kvsim
