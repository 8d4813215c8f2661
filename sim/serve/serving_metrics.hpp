#pragma once
// The serving engine's counters (SPEC 9 kv_cache.* of a block pool,
// memory.activation_reserve_bytes) and the section that writes them.
#include <cstdint>

#include "base/units.hpp"
#include "sim/core/metrics_section.hpp"

namespace kvsim {

struct ServingPoolMetrics {
  Bytes block_bytes = 0;
  int64_t block_size = 0;
  int64_t num_blocks = 0;
  double fragmentation = 0;
  double prefix_hit_rate = 0;
  // Hits of requests re-admitted after a recompute preemption, apart
  // from prefix_hit_rate (first admissions only), which measures sharing.
  double recompute_hit_rate = 0;
  uint64_t evictions = 0;
  Bytes swapped_bytes = 0;
  Bytes activation_reserve_bytes = 0;
};

MetricsSection serving_metrics_section();

}  // namespace kvsim
