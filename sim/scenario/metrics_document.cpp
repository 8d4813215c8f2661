#include "sim/scenario/metrics_document.hpp"
#include "sim/serve/data_parallel_metrics.hpp"

#include "sim/cache/chunk_lru_metrics.hpp"
#include "sim/cache/llama_cells_metrics.hpp"
#include "sim/cache/tiers/tier_metrics.hpp"
#include "sim/cluster/cluster_metrics.hpp"
#include "sim/core/link_metrics.hpp"
#include "sim/core/llama_bench_metrics.hpp"
#include "sim/engine/session_metrics.hpp"
#include "sim/genie/genie_metrics.hpp"
#include "sim/numerics/reuse_quality_probe.hpp"
#include "sim/serve/kv_layout_host_cost.hpp"
#include "sim/serve/pipeline_metrics.hpp"
#include "sim/serve/serving_metrics.hpp"
#include "sim/serve/session_retention_metrics.hpp"
#include "sim/serve/speculative_metrics.hpp"

namespace kvsim {

const std::vector<MetricsSection>& metrics_sections() {
  static const std::vector<MetricsSection> sections = {run_metrics_section(),
                                                       serving_metrics_section(),
                                                       llama_bench_metrics_section(),
                                                       genie_metrics_section(),
                                                       chunk_lru_metrics_section(),
                                                       llama_cells_metrics_section(),
                                                       goodput_metrics_section(),
                                                       kv_tiers_metrics_section(),
                                                       pipeline_metrics_section(),
                                                       cluster_metrics_section(),
                                                       kv_layout_metrics_section(),
                                                       reuse_quality_metrics_section(),
                                                       session_retention_metrics_section(),
                                                       session_metrics_section(),
                                                       speculative_metrics_section(),
                                                       kv_movement_metrics_section(),
                                                       data_parallel_metrics_section(),
                                                       provenance_metrics_section()};
  return sections;
}

nlohmann::ordered_json metrics_to_json(const RunMetrics& m) {
  nlohmann::ordered_json j;
  for (const MetricsSection& section : metrics_sections()) section.write(m, j);
  return j;
}

std::vector<std::string> metric_key_names() {
  // Sections written only for their own runs list their keys too.
  RunMetrics sample;
  sample.requests.completed = 1;  // latency keys are null without a completed request
  sample.part<ClusterMetrics>();
  sample.part<PipelineMetrics>();
  LlamaCellsMetrics& cells = sample.part<LlamaCellsMetrics>();
  cells.served = true;    // with its llama-server keys
  cells.backend = "cpu";  // and its host share's (llama_cells.backend)
  sample.part<KvLayoutMetrics>();
  sample.part<ReuseQualityMetrics>();
  sample.part<SessionRetentionMetrics>();
  sample.part<SessionMetrics>();
  sample.part<SpeculativeMetrics>();
  sample.part<DataParallelMetrics>();
  return metric_leaf_keys(metrics_to_json(sample), /*numeric_only=*/true);
}

}  // namespace kvsim
