// The chunk_lru policy's part of metrics.json (seed 003): chunk hits and
// misses, what copying and re-rotating chunks cost, and the dual pool's
// split. ChunkLruPolicy::report() fills the fields.
#include "sim/cache/chunk_lru_metrics.hpp"

#include "sim/core/metrics.hpp"

namespace kvsim {
namespace {

void write_chunk_lru_metrics(const RunMetrics& m, nlohmann::ordered_json& doc) {
  const ChunkLruMetrics& k = m.parts.get_or_zero<ChunkLruMetrics>();
  metrics_object(doc, "kv_cache")
      .before("bytes_moved")
      .put("chunk_hit_rate", k.chunk_hit_rate)
      .at_end()
      .put("chunk_hits", k.chunk_hits)
      .put("chunk_misses", k.chunk_misses)
      .put("chunk_evictions", k.chunk_evictions)
      .put("chunk_bytes_copied", k.chunk_bytes_copied)
      .put("chunk_rope_tokens", k.chunk_rope_tokens)
      .put("chunk_fallbacks", k.chunk_fallbacks)
      .put("chunk_recompute_tokens", k.chunk_recompute_tokens)
      .put("chunk_system_prompt_context", k.chunk_system_prompt_context);
  metrics_object(doc, "memory")
      .at_end()
      .put("main_pool_bytes", k.main_pool_bytes)
      .put("chunk_pool_bytes", k.chunk_pool_bytes);
}

}  // namespace

MetricsSection chunk_lru_metrics_section() {
  return {"chunk_lru", write_chunk_lru_metrics};
}

}  // namespace kvsim
