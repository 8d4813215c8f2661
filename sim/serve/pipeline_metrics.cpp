// metrics.json's `pipeline` object: written for a pipeline-parallel run only,
// so a one-stage run's file keeps exactly its keys.
#include "sim/serve/pipeline_metrics.hpp"

#include "sim/core/metrics.hpp"

namespace kvsim {
namespace {

void write_pipeline(const RunMetrics& m, nlohmann::ordered_json& doc) {
  const PipelineMetrics* found = m.find<PipelineMetrics>();
  if (found == nullptr) return;
  const PipelineMetrics& p = *found;
  MetricsObject o = metrics_object(doc, "pipeline");
  o.put("stages", p.stages)
      .put("micro_batches", p.micro_batches)
      .put("devices", p.devices)
      .put("layers", p.layers)
      .put("link", p.link)
      .put("binding_stage", p.binding_stage)
      .put("binding_stage_layers", p.binding_stage_layers)
      .put("binding_stage_weights_bytes", p.binding_stage_weights_bytes)
      .put("stage_link_bytes", p.stage_link_bytes);
}

}  // namespace

MetricsSection pipeline_metrics_section() {
  return {"pipeline", write_pipeline};
}

}  // namespace kvsim
