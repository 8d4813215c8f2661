#include "models/model_spec.hpp"
#include "base/checked_math.hpp"

#include <fmt/format.h>

#include <algorithm>
#include <cmath>
#include <stdexcept>

namespace kvsim {

namespace {

// Parameters of one layer's attention projections for a rank that holds
// `q_heads` query heads and `kv_heads` KV heads:
//   dense: q h x (Hq*d), k and v h x (Hkv*d) each, o (Hq*d) x h;
//   latent (DeepSeek MLA): q_a h x q_lora, q_b q_lora x Hq*(nope+rope) (or q
//   h x Hq*(nope+rope) without q_lora), kv_a h x (kv_lora+rope), kv_b
//   kv_lora x Hq*(nope+v), o Hq*v x h. q_a and kv_a are replicated on ranks.
int64_t attention_linear_parameters(const ModelSpec& m, int64_t q_heads, int64_t kv_heads) {
  const int64_t h = m.hidden_size;
  if (m.mla.enabled()) {
    const MlaShape& a = m.mla;
    const int64_t qk = a.qk_nope_head_dim + a.qk_rope_head_dim;
    const int64_t q =
        a.q_lora_rank > 0 ? h * a.q_lora_rank + a.q_lora_rank * q_heads * qk : h * q_heads * qk;
    return q + h * (a.kv_lora_rank + a.qk_rope_head_dim) +
           a.kv_lora_rank * q_heads * (a.qk_nope_head_dim + a.v_head_dim) +
           q_heads * a.v_head_dim * h;
  }
  const int64_t d = m.head_dim;
  return h * (q_heads + 2 * kv_heads) * d + q_heads * d * h;
}

// Parameters of layer `layer`'s MLP on one of `tp` ranks (columns split):
// dense gate, up, down = 3*h*I; a MoE layer holds `routed` experts of
// 3*h*I_expert (columns split over `expert_tp`: tp without expert
// parallelism, 1 when whole experts sit on expert-parallel ranks) plus its
// shared experts 3*h*I_shared (split over tp).
int64_t mlp_linear_parameters(const ModelSpec& m, int64_t layer, int64_t tp, int64_t routed,
                              int64_t expert_tp) {
  const int64_t h = m.hidden_size;
  if (!m.is_moe_layer(layer)) return 3 * h * ceil_div(m.intermediate_size, tp);
  return 3 * h *
         (routed * ceil_div(m.moe.expert_intermediate, expert_tp) +
          ceil_div(m.moe.shared_intermediate, tp));
}

// Linear parameters of all layers on one of `tp` ranks, with `routed`
// experts per MoE layer (all of them, the active top-k, or an
// expert-parallel rank's share).
int64_t all_layers_linear_parameters(const ModelSpec& m, int64_t tp, int64_t routed,
                                     int64_t expert_tp) {
  const int64_t attention =
      attention_linear_parameters(m, ceil_div(m.num_attention_heads, tp), m.kv_heads_per_rank(tp));
  int64_t total = 0;
  for (int64_t layer = 0; layer < m.num_hidden_layers; ++layer)
    total += attention + mlp_linear_parameters(m, layer, tp, routed, expert_tp);
  return total;
}

// Small 16-bit parameters beyond norms and biases, replicated on ranks: the
// router (E x h per MoE layer, plus Qwen2-MoE's h x 1 shared-expert gate;
// quantised checkpoints keep it in 16-bit) and MLA's q_a / kv_a norms.
int64_t extra_small_parameters(const ModelSpec& m) {
  int64_t total = 0;
  for (int64_t layer = 0; layer < m.num_hidden_layers; ++layer) {
    if (m.is_moe_layer(layer))
      total += m.hidden_size * (m.moe.experts + (m.moe.shared_expert_gate ? 1 : 0));
    if (m.mla.enabled()) total += m.mla.q_lora_rank + m.mla.kv_lora_rank;
  }
  return total;
}

// Bytes of `n` linear weights in the model's weight format. With a
// quantization_config, the checkpoint's own group overhead
// (WeightQuant::bytes_per_weight). Otherwise w4a16 (and w4) packs two weights per byte
// and adds one fp16 scale per group of 128 (GPTQ/AWQ group_size=128, the
// common export); w8a8 stores int8 weights (its per-channel scales are a
// rounding error and are left out).
double linear_bytes(const ModelSpec& m, int64_t n) {
  if (m.quant.enabled()) return m.quant.bytes_per_weight() * static_cast<double>(n);
  if (int4_weights(m.weights_dtype)) {
    return static_cast<double>(ceil_div(n, 2)) + 2.0 * static_cast<double>(ceil_div(n, 128));
  }
  return m.linear_weight_bytes_per_parameter() * static_cast<double>(n);
}

// Small replicated parameters: two RMSNorm weights per layer (hidden each),
// the q/k norms (head_dim each) when qk_norm, and the final norm.
int64_t norm_parameters(const ModelSpec& m) {
  const int64_t per_layer = m.norms_per_layer * m.hidden_size + (m.qk_norm ? 2 * m.head_dim : 0);
  return m.num_hidden_layers * per_layer + m.hidden_size;
}

// q/k/v biases of one layer for a rank: (Hq + 2*Hkv) * d when attention_bias.
int64_t layer_bias_parameters(const ModelSpec& m, int64_t q_heads, int64_t kv_heads) {
  return m.attention_bias ? (q_heads + 2 * kv_heads) * m.head_dim : 0;
}

// embedding vocab x h, plus lm_head vocab x h unless tied.
int64_t embedding_parameters(const ModelSpec& m, int64_t vocab) {
  return vocab * m.hidden_size * (m.tie_word_embeddings ? 1 : 2);
}

}  // namespace

// parameters = embeddings (vocab*h)
//            + layers * (q,k,v,o weights + q/k/v bias when attention_bias
//                        + MLP 3*h*I + 2 RMSNorm weights (2h) + q/k norms (2d) when qk_norm)
//            + final norm (h)
//            + lm_head (vocab*h) unless tied
//            + MoE routers and MLA norms (extra_small_parameters).
// A MoE layer counts every expert. Checked against published counts in
// tests/test_models.cpp and tests/test_model_families.cpp.
int64_t ModelSpec::parameter_count() const {
  const int64_t layers = num_hidden_layers;
  return embedding_parameters(*this, vocab_size) + linear_parameter_count() +
         layers * layer_bias_parameters(*this, num_attention_heads, num_key_value_heads) +
         norm_parameters(*this) + extra_small_parameters(*this);
}

int64_t ModelSpec::active_parameter_count() const {
  return parameter_count() - linear_parameter_count() +
         all_layers_linear_parameters(*this, 1, moe.experts_per_token, 1);
}

// Dense: layers * (h*(Hq + 2*Hkv)*d + Hq*d*h + 3*h*I). lm_head is not
// counted: the quantised exports kvsim models (GPTQ, AWQ, W8A8, fp8) keep it
// in 16-bit.
int64_t ModelSpec::linear_parameter_count() const {
  return all_layers_linear_parameters(*this, 1, moe.experts, 1);
}

// With expert parallelism (ep > 1) each rank holds experts / ep whole
// experts per MoE layer (vLLM's FusedMoE with expert parallelism), the rest
// of the layer split over tp as without it.
int64_t ModelSpec::linear_parameter_count_per_rank(int64_t tp, int64_t ep) const {
  if (tp < 1) throw std::invalid_argument("tensor parallel size must be >= 1");
  if (ep < 1) throw std::invalid_argument("expert parallel size must be >= 1");
  if (ep == 1) return all_layers_linear_parameters(*this, tp, moe.experts, tp);
  return all_layers_linear_parameters(*this, tp, ceil_div(moe.experts, ep), 1);
}

// HF (Qwen2-MoE, Qwen3-MoE): MoE unless listed in mlp_only_layers, and only
// every decoder_sparse_step-th layer ((i + 1) % step == 0); DeepSeek: from
// first_k_dense_replace on, every moe_layer_freq-th layer (i % freq == 0).
bool ModelSpec::is_moe_layer(int64_t layer) const {
  if (!moe.enabled() || layer < moe.first_dense_layers) return false;
  for (const int64_t dense : moe.dense_layers)
    if (dense == layer) return false;
  return (layer + 1) % moe.sparse_step == 0 && layer % moe.layer_freq == 0;
}

// Each token picks k of E experts; a given expert is missed by one token with
// probability 1 - k/E, by all B independent tokens with (1 - k/E)^B.
double ModelSpec::expected_experts_touched(int64_t tokens) const {
  if (!moe.enabled() || tokens <= 0) return 0.0;
  const double e = static_cast<double>(moe.experts);
  const double k = static_cast<double>(moe.experts_per_token);
  return e * (1.0 - std::pow(1.0 - k / e, static_cast<double>(tokens)));
}

double ModelSpec::linear_weight_bytes_per_parameter() const {
  if (quant.enabled()) return quant.bytes_per_weight();
  if (weights_dtype == "fp32") return 4.0;
  if (weights_dtype == "w8a8" || weights_dtype == "fp8") return 1.0;
  if (int4_weights(weights_dtype)) return 0.5 + 2.0 / 128.0;
  if (weights_dtype == "fp4") return 0.5 + 1.0 / 16.0;
  return 2.0;  // fp16, bf16
}

Bytes ModelSpec::embedding_bytes_per_parameter() const {
  return weights_dtype == "fp32" ? 4 : 2;
}

// linear weights at the quantised width + (embeddings, lm_head, biases, norms)
// at embedding_bytes_per_parameter().
Bytes ModelSpec::weight_bytes() const {
  return weight_bytes_per_rank(1);
}

// One rank's share (vLLM sharding): q heads, KV heads (kv_heads_per_rank),
// MLP columns and the vocabulary (padded up) are split over tp; norms are
// replicated. tp = 1 gives weight_bytes().
Bytes ModelSpec::weight_bytes_per_rank(int64_t tp, int64_t ep) const {
  if (tp < 1) throw std::invalid_argument("tensor parallel size must be >= 1");
  const int64_t q_heads = ceil_div(num_attention_heads, tp);
  const int64_t kv_heads = kv_heads_per_rank(tp);
  const int64_t small = embedding_parameters(*this, ceil_div(vocab_size, tp)) +
                        num_hidden_layers * layer_bias_parameters(*this, q_heads, kv_heads) +
                        norm_parameters(*this) + extra_small_parameters(*this);
  const double bytes = linear_bytes(*this, linear_parameter_count_per_rank(tp, ep)) +
                       static_cast<double>(small * embedding_bytes_per_parameter());
  return static_cast<Bytes>(bytes);
}

// kv_heads / tp; when tp exceeds the KV heads each rank keeps one (replicated)
// head, as vLLM does. Rounded up so a non-dividing tp never under-counts.
int64_t ModelSpec::kv_heads_per_rank(int64_t tp) const {
  if (tp < 1) throw std::invalid_argument("tensor parallel size must be >= 1");
  return std::max<int64_t>(1, ceil_div(num_key_value_heads, tp));
}

// 2 (K and V) * kv_heads_per_rank * head_dim * dtype bytes; MLA caches the
// latent and the RoPE key: (kv_lora_rank + qk_rope_head_dim) * dtype bytes,
// whole on every rank (DeepSeek-V3 bf16: (512 + 64) * 2 = 1,152 B).
Bytes ModelSpec::kv_bytes_per_token_per_layer(Bytes kv_dtype_bytes_value, int64_t tp) const {
  if (mla.enabled()) return (mla.kv_lora_rank + mla.qk_rope_head_dim) * kv_dtype_bytes_value;
  return 2 * kv_heads_per_rank(tp) * head_dim * kv_dtype_bytes_value;
}

// layers * kv_bytes_per_token_per_layer: every layer's entry, sliding or not
// (a pool that keeps a sliding layer's tokens beyond its window holds them).
// Llama-2-7B fp16: 2*32*32*128*2 = 524288 B per token (seed 004).
Bytes ModelSpec::kv_bytes_per_token(Bytes kv_dtype_bytes_value, int64_t tp) const {
  return num_hidden_layers * kv_bytes_per_token_per_layer(kv_dtype_bytes_value, tp);
}

// Sum over layers of min(tokens, window) * per-layer bytes: what a cache
// that drops tokens outside each sliding layer's window holds.
Bytes ModelSpec::kv_bytes_for_context(int64_t tokens, Bytes kv_dtype_bytes_value,
                                      int64_t tp) const {
  const Bytes per_layer = kv_bytes_per_token_per_layer(kv_dtype_bytes_value, tp);
  Bytes total = 0;
  for (int64_t layer = 0; layer < num_hidden_layers; ++layer) {
    const auto i = static_cast<size_t>(layer);
    const bool sliding = i < layer_attention.size() && layer_attention[i].sliding;
    total += (sliding ? std::min(tokens, layer_attention[i].window) : tokens) * per_layer;
  }
  return total;
}

// Quantised formats (w8a8 dequantises into 16-bit accumulations on Ascend,
// w4a16 by name, w4's activations are fp16) compute in 16-bit; only fp32
// models compute in fp32.
Bytes ModelSpec::activation_bytes() const {
  return weights_dtype == "fp32" ? 4 : 2;
}

// vLLM's rules: heads split over tp; the MLP of dense layers and, without
// expert parallelism, each expert's columns split over tp; KV heads split or
// replicated (latent attention caches one latent per token, replicated: no
// rule). With ep > 1: whole experts split over ep ranks, ep a multiple of tp
// (ep / tp data-parallel attention replicas).
std::string ModelSpec::tensor_parallel_problem(int64_t tp, int64_t ep) const {
  if (tp < 1) return fmt::format("tensor parallel size {} must be >= 1", tp);
  if (ep < 1) return fmt::format("expert parallel size {} must be >= 1", ep);
  if (num_attention_heads % tp != 0)
    return fmt::format("{} attention heads do not divide over {} ranks", num_attention_heads, tp);
  bool dense_layers = false;
  for (int64_t layer = 0; layer < num_hidden_layers && !dense_layers; ++layer)
    dense_layers = !is_moe_layer(layer);
  if (dense_layers && intermediate_size % tp != 0)
    return fmt::format("intermediate_size {} does not divide over {} ranks", intermediate_size, tp);
  if (!mla.enabled() &&
      (tp <= num_key_value_heads ? num_key_value_heads % tp != 0 : tp % num_key_value_heads != 0))
    return fmt::format(
        "{} KV heads cannot be split over or replicated on {} ranks (one must divide the other)",
        num_key_value_heads, tp);
  if (ep == 1) {
    if (moe.enabled() && moe.expert_intermediate % tp != 0)
      return fmt::format("moe_intermediate_size {} does not divide over {} ranks",
                         moe.expert_intermediate, tp);
    return {};
  }
  if (!moe.enabled())
    return fmt::format("model '{}' has no experts to split over {} expert-parallel ranks", name,
                       ep);
  if (moe.experts % ep != 0)
    return fmt::format("{} experts do not divide over {} expert-parallel ranks", moe.experts, ep);
  if (ep % tp != 0)
    return fmt::format(
        "expert parallelism {} is not a multiple of tensor parallelism {} (ep / tp attention "
        "replicas share the experts)",
        ep, tp);
  return {};
}

Bytes kv_dtype_bytes(const std::string& dtype) {
  if (dtype == "fp16" || dtype == "bf16") return 2;
  if (dtype == "int8" || dtype == "fp8" || dtype == "fp8_e4m3" || dtype == "fp8_e5m2") return 1;
  if (dtype == "fp32") return 4;
  throw std::invalid_argument(fmt::format(
      "unknown KV-cache dtype '{}' (fp16, bf16, int8, fp8, fp8_e4m3, fp8_e5m2, fp32)", dtype));
}

}  // namespace kvsim
