#pragma once
// Prices an engine step of a pipeline-parallel instance (vLLM's
// pipeline_parallel_size): the decoder layers split into stages
// (models/pipeline_stages.hpp), each stage priced by a TimingModel of its
// own layers, the step's batch cut into micro-batches that follow one
// another through the stages, and the activations crossing each stage
// boundary over a link of the device file.
//
// The model (vLLM runs pipeline_parallel_size batches in flight: V0 one
// virtual engine per stage, V1 a batch queue of that depth; a sequence is in
// one batch at a time, since its next token needs its last):
//   - an engine step is one round in which every scheduled sequence advances
//     once; its sequences are cut into m = min(micro_batches, sequences)
//     micro-batches, equal shares of the step's work (V0 gives each new
//     request to the virtual engine with the fewest, which keeps them even);
//   - d_s: one micro-batch on stage s (that stage's TimingModel, its layers'
//     ops; the embedding on the first stage, the final norm, LM head and
//     sampling on the last); x: its activations crossing one boundary;
//   - fill = sum_s d_s + (p - 1) x: one micro-batch through every stage,
//     which a sequence's next token waits for;
//   - interval = max_s (d_s + x on every stage but the last): the busiest
//     stage's time per micro-batch, the steady-state spacing of micro-batches;
//   - the round's period = max(fill, m x interval). With p uniform stages
//     of t and x = 0 this is max(p t, m t): GPipe's (m + p - 1) t less the
//     p - 1 bubble slots the next round's micro-batches fill, since nothing
//     flushes between rounds (Huang et al., GPipe, 2019, sec. 2.3; vLLM
//     keeps p batches in flight). With m = 1 it is the fill: one batch
//     crossing the stages one after another.
// The tokens of a round are stamped at its end: a sequence's token spacing
// is the period, and its first token comes at least one fill after its round
// starts.
//
// Activations between stages: vLLM's non-last stages return
// IntermediateTensors {hidden_states, residual} (the residual add is fused
// into the next norm), 2 x T x hidden x activation bytes. Each of the tp
// device pairs sends 1/tp of it (send_tensor_dict with the tensor-parallel
// group as all_gather_group) and the receiving stage all-gathers the slices
// over its device link:
//   x = (2 T h a / tp) / link_bw + link_latency
//       + [tp > 1] ((tp - 1) / tp x 2 T h a) / device_link_bw + device_link_latency.
#include <cstdint>
#include <memory>
#include <vector>

#include "devices/timing_model.hpp"
#include "models/pipeline_stages.hpp"

namespace kvsim {

struct PipelineParams {
  int64_t stages = 1;
  int64_t micro_batches = 1;  // most micro-batches in flight (vLLM: stages)
  // The link between stages: the device link (HCCS, stages in one node) or
  // the network link (RoCE, stages on different nodes).
  bool network_link = false;
  // The decoder layers the step's swap and copy bytes stand for (per-rank
  // bytes of the pool's binding stage, PoolSizing::stage_layers); each stage
  // moves its own layers' share. 0: every layer.
  int64_t kv_bytes_layers = 0;
  std::vector<int64_t> partition;  // layers per stage; empty: vLLM's split
};

// What one step cost, stage by stage (for tests and reports).
struct PipelineStepTiming {
  StepTiming step;  // step.latency: the round's period
  int64_t micro_batches = 1;
  std::vector<TimeNs> stage_time;  // one micro-batch on each stage (mean over micro-batches)
  TimeNs transfer = 0;             // one micro-batch across one boundary (mean)
  TimeNs fill = 0;                 // longest micro-batch through every stage
  TimeNs interval = 0;             // busiest stage per micro-batch (mean)
  double stage_link_bytes = 0;     // activations across all boundaries, whole step
};

class PipelineTiming {
 public:
  // Throws std::invalid_argument as TimingModel does, and when stages or
  // micro_batches are below 1, stages exceed the model's layers, or the
  // chosen link has no bandwidth in the device file.
  PipelineTiming(const DeviceSpec& device, const ModelSpec& model, TimingModel::Params params,
                 PipelineParams pipeline);
  ~PipelineTiming();

  // The step's price with `sequences` scheduled sequences (at most that many
  // micro-batches). One stage: exactly TimingModel::price(work).
  StepTiming price(const StepWork& work, int64_t sequences = 1) const;
  // price(work, sequences).latency (one stage: TimingModel::step_latency).
  TimeNs step_latency(const StepWork& work, int64_t sequences = 1) const;
  PipelineStepTiming price_stages(const StepWork& work, int64_t sequences = 1) const;

  int64_t stages() const { return static_cast<int64_t>(stages_.size()); }
  const std::vector<PipelineStage>& stage_layout() const { return stages_; }
  // Activations one boundary carries for `tokens` tokens, the whole instance.
  double boundary_bytes(double tokens) const;
  // Time for `tokens` tokens' activations to cross one boundary.
  TimeNs transfer_time(double tokens) const;

 private:
  StepTiming price_on_stage(size_t s, const StepWork& work) const;

  DeviceSpec device_;
  ModelSpec model_;
  TimingModel::Params params_;
  PipelineParams pipeline_;
  std::vector<PipelineStage> stages_;
  std::vector<ModelSpec> stage_models_;
  std::vector<std::unique_ptr<TimingModel>> timing_;
  int64_t kv_bytes_layers_ = 0;
};

}  // namespace kvsim
