#pragma once
// Pipeline parallelism (vLLM's pipeline_parallel_size): the decoder layers
// split into consecutive stages, each stage on its own group of tp devices.
// The first stage also holds the token embedding, the last the final norm and
// the LM head. A stage is priced and sized as a model of its own layers
// (stage_model), so every per-layer formula applies unchanged.
#include <cstdint>
#include <string>
#include <vector>

#include "models/model_spec.hpp"

namespace kvsim {

struct PipelineStage {
  int64_t index = 0;        // 0 .. stages - 1
  int64_t first_layer = 0;  // of the whole model
  int64_t layers = 0;
  bool first = true;  // holds the embedding
  bool last = true;   // holds the final norm and the LM head
};

// vLLM's split (vllm/distributed/utils.py get_pp_indices, its own tests give
// 5 layers over 3 stages as 2, 2, 1): each stage gets floor(layers / stages)
// layers, and the remaining layers % stages go one each to the stages just
// before the last, from the second-to-last backwards; the last stage, which
// also runs the final norm and the LM head, never gets an extra layer.
// `stages` must be within 1..layers (pipeline_problem). A non-empty
// `partition` gives each stage's layers instead (vLLM's
// VLLM_PP_LAYER_PARTITION, e.g. "32,29" for a 61-layer model over 2 stages).
// Throws std::invalid_argument on a layout pipeline_problem refuses.
std::vector<PipelineStage> pipeline_stages(int64_t layers, int64_t stages,
                                           const std::vector<int64_t>& partition = {});

// Why the model cannot be laid out over `stages` stages ("" when it can):
// every stage needs at least one layer; a partition has one positive entry
// per stage and its entries add up to the model's layers (vLLM's rules).
std::string pipeline_problem(const ModelSpec& model, int64_t stages,
                             const std::vector<int64_t>& partition = {});

// The model as one stage sees it: num_hidden_layers the stage's layers, the
// per-layer attention kinds and mixture-of-experts placement of exactly those
// layers (the layer pattern is rewritten as an explicit list of dense layers,
// since a slice starting mid-pattern has no period of its own).
ModelSpec stage_model(const ModelSpec& model, const PipelineStage& stage);

// Weight bytes one device of the stage holds (tensor rank `tp`, expert rank
// `ep`): its layers, plus the vocabulary-sharded embedding on the first stage,
// the final norm and the LM head on the last. Tied embeddings are one tensor
// at stages = 1; over several stages the last keeps its own copy for the LM
// head (vLLM builds ParallelLMHead on the last rank and embeds on the first).
// One stage holding the whole model gives weight_bytes_per_rank(tp, ep).
Bytes stage_weight_bytes_per_rank(const ModelSpec& model, const PipelineStage& stage, int64_t tp,
                                  int64_t ep);

}  // namespace kvsim
