#pragma once
// The shape of a speculative drafter as a model of its own, so that its
// weights, its KV cache and its forward passes come from the same formulas
// as the target's (models/model_spec.hpp, step_ops.hpp), plus what those
// formulas lack:
//   mtp          DeepSeek-V3's multi-token-prediction module (DeepSeek-V3
//                technical report, sec. 2.2; HF config num_nextn_predict_layers;
//                vLLM vllm/model_executor/models/deepseek_mtp.py): per module
//                one full decoder layer of the target's kind (MLA + MoE for
//                DeepSeek-V3), the projection eh_proj (2h x h) of the
//                concatenated embedding and hidden state, two RMSNorms
//                (enorm, hnorm) and a final norm; the embedding and the
//                output head are the target's (shared, not held twice);
//   eagle        an EAGLE head (vLLM llama_eagle.py): one decoder layer of
//                the target's attention with a dense MLP of the target's
//                intermediate_size, and fc (2h x h); embedding and LM head
//                shared with the target;
//   eagle3       an EAGLE-3 head (vLLM llama_eagle3.py): the same layer with
//                its attention input widened to 2h (q/k/v read the embedding
//                and the fused hidden state), fc (3h x h) fusing three of the
//                target's hidden states, and an LM head of its own (vLLM
//                shares the LM head for every method but eagle3);
//   draft_model  a whole smaller model; nothing shared.
#include <cstdint>

#include "base/units.hpp"
#include "models/model_spec.hpp"

namespace kvsim {

struct DrafterShape {
  ModelSpec model;              // the drafter's decoder layers (and head) as a model
  int64_t extra_linear = 0;     // linear weights the model's formula lacks (whole, not per rank)
  int64_t extra_small = 0;      // 16-bit weights it lacks (norms), replicated on ranks
  bool holds_embedding = true;  // false: the target's embedding serves
  bool holds_lm_head = true;    // false: the target's LM head serves

  // Bytes one tensor-parallel rank holds beside the target's weights.
  Bytes weight_bytes_per_rank(int64_t tp, int64_t ep = 1) const;
  // Parameters held beside the target's (the whole drafter, tp = 1).
  int64_t parameter_count() const;
  // The drafter's KV cache per token on one rank: its layers' entries.
  Bytes kv_bytes_per_token(Bytes kv_dtype_bytes, int64_t tp) const {
    return model.kv_bytes_per_token(kv_dtype_bytes, tp);
  }
};

// num_nextn_predict_layers modules of the target; the target must have some.
DrafterShape mtp_drafter(const ModelSpec& target);
DrafterShape eagle_drafter(const ModelSpec& target, bool eagle3);
DrafterShape draft_model_drafter(const ModelSpec& draft);

}  // namespace kvsim
