#pragma once
// A pipeline-parallel run's layout and the activations its stages passed on
// (devices/pipeline_timing.hpp), and the section that writes metrics.json's
// `pipeline` object: for a pipeline-parallel run only, so a one-stage run's
// file keeps exactly its keys.
#include <cstdint>
#include <string>

#include "base/units.hpp"
#include "sim/core/metrics_section.hpp"

namespace kvsim {

struct PipelineMetrics {
  int64_t stages = 0, micro_batches = 0;
  int64_t devices = 0;                    // tensor x pipeline devices of the instance
  std::string layers;                     // decoder layers per stage, "16,16,15,15"
  std::string link;                       // the link between stages: device (HCCS) | network (RoCE)
  int64_t binding_stage = 0;              // the stage whose memory sets the block count
  int64_t binding_stage_layers = 0;       // its decoder layers
  Bytes binding_stage_weights_bytes = 0;  // per device of that stage
  double stage_link_bytes = 0;            // activations across every boundary, whole run
};

MetricsSection pipeline_metrics_section();

}  // namespace kvsim
