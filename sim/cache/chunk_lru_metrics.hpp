#pragma once
// chunk_lru's counters (seed 003): chunk hits and misses, what copying and
// re-rotating chunks cost, and the dual pool's split; ChunkLruPolicy::report
// fills them; and the section that writes them.
#include <cstdint>

#include "base/units.hpp"
#include "sim/core/metrics_section.hpp"

namespace kvsim {

struct ChunkLruMetrics {
  double chunk_hit_rate = 0;
  int64_t chunk_hits = 0, chunk_misses = 0, chunk_evictions = 0;
  Bytes chunk_bytes_copied = 0;             // chunk pool -> main pool
  int64_t chunk_rope_tokens = 0;            // keys re-rotated to their real position
  int64_t chunk_fallbacks = 0;              // prompts without separator, plain prefill
  int64_t chunk_recompute_tokens = 0;       // placed tokens recomputed (CacheBlend)
  int64_t chunk_system_prompt_context = 0;  // system-prompt keys missed chunks attended
  Bytes main_pool_bytes = 0, chunk_pool_bytes = 0;
};

MetricsSection chunk_lru_metrics_section();

}  // namespace kvsim
