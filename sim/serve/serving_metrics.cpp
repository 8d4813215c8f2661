// The serving engine's part of metrics.json: the pool's geometry and what
// its blocks did (SPEC 9 kv_cache.*, memory.activation_reserve_bytes).
#include "sim/serve/serving_metrics.hpp"

#include "sim/core/metrics.hpp"

namespace kvsim {
namespace {

void write_serving_metrics(const RunMetrics& m, nlohmann::ordered_json& doc) {
  const ServingPoolMetrics& k = m.parts.get_or_zero<ServingPoolMetrics>();
  metrics_object(doc, "kv_cache")
      .before("capacity_tokens")
      .put("block_bytes", k.block_bytes)
      .put("block_size", k.block_size)
      .put("num_blocks", k.num_blocks)
      .before("bytes_moved")
      .put("fragmentation", k.fragmentation)
      .put("prefix_hit_rate", k.prefix_hit_rate)
      .put("recompute_hit_rate", k.recompute_hit_rate)
      .before("window_evicted_tokens")
      .put("evictions", k.evictions)
      .put("swapped_bytes", k.swapped_bytes);
  metrics_object(doc, "memory")
      .at_end()
      .put("activation_reserve_bytes", k.activation_reserve_bytes);
}

}  // namespace

MetricsSection serving_metrics_section() {
  return {"serving", write_serving_metrics};
}

}  // namespace kvsim
