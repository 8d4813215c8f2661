#pragma once
// The parts of a model's shape beyond a dense decoder layer, each read from
// its Hugging Face config.json keys (SPEC 4b): mixture-of-experts MLPs,
// multi-head latent attention, the quantised weight format, and the kind of
// attention each layer runs. A dense full-attention model in 16-bit leaves all
// of them at their defaults, and its numbers are the dense formulas'.
#include <cstdint>
#include <string>
#include <vector>

namespace kvsim {

// Mixture of experts (Mixtral, Qwen2/3-MoE, DeepSeek-V2/V3 naming).
struct MoeShape {
  int64_t experts = 0;              // num_local_experts | num_experts | n_routed_experts; 0: dense
  int64_t experts_per_token = 0;    // num_experts_per_tok (top-k)
  int64_t expert_intermediate = 0;  // moe_intermediate_size, else intermediate_size (Mixtral)
  int64_t shared_intermediate = 0;  // shared_expert_intermediate_size, or
                                    // n_shared_experts * moe_intermediate_size; 0: none
  bool shared_expert_gate = false;  // Qwen2-MoE gates its shared expert (h x 1)
  int64_t first_dense_layers = 0;   // first_k_dense_replace (DeepSeek): layers < k are dense
  int64_t sparse_step = 1;          // decoder_sparse_step (Qwen): MoE iff (i + 1) % step == 0
  int64_t layer_freq = 1;           // moe_layer_freq (DeepSeek): MoE iff i % freq == 0
  std::vector<int64_t> dense_layers;  // mlp_only_layers (Qwen)

  bool enabled() const { return experts > 0; }
};

// Multi-head latent attention (DeepSeek-V2/V3). The cache holds one latent
// vector of kv_lora_rank plus the shared RoPE key of qk_rope_head_dim per
// token and layer, instead of K and V per head.
struct MlaShape {
  int64_t kv_lora_rank = 0;  // 0: not MLA
  int64_t q_lora_rank = 0;   // 0: q is projected directly (DeepSeek-V2-Lite)
  int64_t qk_rope_head_dim = 0;
  int64_t qk_nope_head_dim = 0;
  int64_t v_head_dim = 0;

  bool enabled() const { return kv_lora_rank > 0; }
};

// How linear weights are stored when a `quantization_config` says so. Each
// group of `group_size` weights carries a scale of `scale_bytes` and, with
// `zero_point`, a zero point packed at the weight width.
struct WeightQuant {
  std::string method;      // awq | gptq | fp8 | compressed-tensors | bitsandbytes; "": none
  int64_t bits = 16;       // width of one stored weight
  int64_t group_size = 0;  // weights per scale; 0: per channel or per tensor (overhead ~0)
  double scale_bytes = 2;  // bytes of one group's scale
  bool zero_point = false;

  bool enabled() const { return !method.empty(); }
  // Average bytes per linear weight, overhead included.
  double bytes_per_weight() const {
    double b = static_cast<double>(bits) / 8.0;
    if (group_size > 0)
      b += (scale_bytes + (zero_point ? static_cast<double>(bits) / 8.0 : 0.0)) /
           static_cast<double>(group_size);
    return b;
  }
};

// The attention one layer runs: over every earlier token, or over the last
// `window` tokens only (sliding window).
struct LayerAttention {
  bool sliding = false;
  int64_t window = 0;  // tokens, when sliding
};

}  // namespace kvsim
