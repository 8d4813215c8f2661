#pragma once
// Tests read a run's component counters (sim/core/metrics_parts.hpp) through
// these: zeros when the component did not take part, as metrics.json has them.
#include "sim/cache/chunk_lru_metrics.hpp"
#include "sim/cache/llama_cells_metrics.hpp"
#include "sim/cache/tiers/tier_metrics.hpp"
#include "sim/cluster/cluster_metrics.hpp"
#include "sim/core/llama_bench_metrics.hpp"
#include "sim/core/metrics.hpp"
#include "sim/genie/genie_metrics.hpp"
#include "sim/serve/pipeline_metrics.hpp"
#include "sim/serve/serving_metrics.hpp"

namespace kvsim::testing {

inline const ServingPoolMetrics& pool_of(const RunMetrics& m) {
  return m.parts.get_or_zero<ServingPoolMetrics>();
}
inline const GenieRunMetrics& genie_of(const RunMetrics& m) {
  return m.parts.get_or_zero<GenieRunMetrics>();
}
inline const std::vector<LlamaBenchMetrics::Test>& bench_of(const RunMetrics& m) {
  return m.parts.get_or_zero<LlamaBenchMetrics>().tests;
}
inline const ChunkLruMetrics& chunks_of(const RunMetrics& m) {
  return m.parts.get_or_zero<ChunkLruMetrics>();
}
inline const LlamaCellsMetrics& cells_of(const RunMetrics& m) {
  return m.parts.get_or_zero<LlamaCellsMetrics>();
}
inline const KvTiersMetrics& tiers_of(const RunMetrics& m) {
  return m.parts.get_or_zero<KvTiersMetrics>();
}

}  // namespace kvsim::testing
