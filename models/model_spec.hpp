#pragma once
// A transformer model's shape, read from a file that uses Hugging Face
// `config.json` key names (SPEC 4b), and everything derived from the shape:
// parameter count, weight bytes, KV bytes per token. Numbers are derived,
// never typed in.
#include <cstdint>
#include <string>
#include <vector>

#include "base/reader.hpp"
#include "base/units.hpp"
#include "models/model_shape_parts.hpp"

namespace kvsim {

struct ModelSpec {
  std::string name;        // kvsim key `name` (or the file stem / HF `_name_or_path`)
  std::string source;      // where the shape comes from (kvsim key `source`)
  std::string model_type;  // HF `model_type` (llama, qwen2, qwen3, ...)
  int64_t hidden_size = 0;
  int64_t num_hidden_layers = 0;
  int64_t num_attention_heads = 0;
  int64_t num_key_value_heads = 0;  // defaults to num_attention_heads (HF rule)
  int64_t head_dim = 0;             // defaults to hidden_size / num_attention_heads (HF rule)
  int64_t intermediate_size = 0;
  int64_t vocab_size = 0;
  int64_t max_position_embeddings = 0;
  double rope_theta = 10000.0;
  double rms_norm_eps = 1e-5;
  bool tie_word_embeddings = false;
  bool attention_bias = false;  // q/k/v projections carry a bias (Qwen2 family)
  bool qk_norm = false;         // per-head RMSNorm on q and k (Qwen3 family)
  // RoPE convention: "rotate_half" (Hugging Face Llama) or "adjacent_pairs" (llama2.c).
  std::string rope_style = "rotate_half";
  // Storage of the weights: fp32 | fp16 | bf16 | w8a8 | w4a16 | w4 | fp8 | fp4.
  std::string weights_dtype = "fp16";
  // RMSNorm weights per decoder layer: 2 (Llama, Qwen), 4 (Gemma 2/3 add a
  // norm after attention and around the MLP).
  int64_t norms_per_layer = 2;
  // Multi-token-prediction modules beside the main stack (HF
  // num_nextn_predict_layers, DeepSeek-V3: 1): not in num_hidden_layers, nor
  // in any count below; only a speculative drafter (method mtp) runs them.
  int64_t num_nextn_predict_layers = 0;
  MoeShape moe;                                 // experts == 0: one dense MLP per layer
  MlaShape mla;                                 // kv_lora_rank == 0: K and V per KV head
  WeightQuant quant;                            // from quantization_config; method "": none
  std::vector<LayerAttention> layer_attention;  // one per layer (all full unless read)

  int64_t q_dim() const { return num_attention_heads * head_dim; }
  int64_t kv_dim() const { return num_key_value_heads * head_dim; }

  // Parameters of the whole model (embeddings, every layer, final norm,
  // lm_head unless tied).
  int64_t parameter_count() const;
  // Parameters held in linear (matmul) weights, the part that quantises.
  int64_t linear_parameter_count() const;
  // Bytes of all weights in `weights_dtype`: linear weights at the quantised
  // width (w8a8: 1 B, w4a16: 0.5 B + one fp16 scale per 128-weight group),
  // embeddings and norms at 2 B (fp32: 4 B).
  Bytes weight_bytes() const;
  // One tensor-parallel rank's share: linear weights and embeddings are split
  // over `tp` ranks, norms are replicated.
  // With expert parallelism ep > 1, a MoE layer's routed experts are split
  // whole over ep ranks instead (linear_parameter_count_per_rank).
  Bytes weight_bytes_per_rank(int64_t tp, int64_t ep = 1) const;
  // KV heads one rank holds: kv_heads / tp, or 1 when tp > kv_heads (the KV
  // heads are replicated, as vLLM does).
  int64_t kv_heads_per_rank(int64_t tp) const;
  // Bytes of K and V for one token on one rank:
  // 2 * layers * kv_heads_per_rank * head_dim * kv_dtype_bytes.
  Bytes kv_bytes_per_token(Bytes kv_dtype_bytes, int64_t tp) const;
  // Bytes of the KV cache of one token in one layer on one rank:
  // 2 * kv_heads_per_rank * head_dim * kv_dtype_bytes, or for latent
  // attention (kv_lora_rank + qk_rope_head_dim) * kv_dtype_bytes (the latent
  // is replicated on every rank, as vLLM does).
  Bytes kv_bytes_per_token_per_layer(Bytes kv_dtype_bytes, int64_t tp) const;
  // Bytes of one sequence's KV cache at `tokens` of context: a sliding layer
  // holds at most its window.
  Bytes kv_bytes_for_context(int64_t tokens, Bytes kv_dtype_bytes, int64_t tp) const;
  bool is_moe_layer(int64_t layer) const;
  // Parameters one token runs through: as parameter_count() with only
  // experts_per_token routed experts in each MoE layer.
  int64_t active_parameter_count() const;
  // Expected distinct experts a batch of `tokens` tokens touches in one MoE
  // layer under uniform top-k routing: E * (1 - (1 - k/E)^tokens).
  double expected_experts_touched(int64_t tokens) const;
  // Bytes per activation element in compute (2 for fp16/bf16/w8a8/w4a16/w4, 4 for fp32).
  Bytes activation_bytes() const;

  // Added for step_ops and capacity planning.
  // Average bytes per linear weight: fp32 4, fp16/bf16 2, w8a8 and fp8 1,
  // w4a16 and w4 0.5 + 2/128 (one fp16 scale per 128-weight group) = 0.515625,
  // fp4 0.5 + 1/16 (one e4m3 scale per 16 weights) = 0.5625;
  // with a quantization_config, WeightQuant::bytes_per_weight().
  double linear_weight_bytes_per_parameter() const;
  // Bytes per embedding / lm_head / norm / bias element: 4 for fp32, else 2
  // (quantisation schemes leave these in 16-bit).
  Bytes embedding_bytes_per_parameter() const;
  // Parameters of linear weights one rank holds (query heads, intermediate
  // split over tp; KV heads as kv_heads_per_rank).
  int64_t linear_parameter_count_per_rank(int64_t tp, int64_t ep = 1) const;
  // Why `tp` (and expert parallelism `ep`) cannot shard this model ("" when
  // it can): heads and intermediate_size must divide by tp, and kv_heads
  // must divide by tp or tp by kv_heads (vLLM's rules); experts must divide
  // by ep and ep by tp. For the scenario's cross-field checks.
  std::string tensor_parallel_problem(int64_t tp, int64_t ep = 1) const;
};

// Reads a model from a map node. YAML model files are strict (unknown keys are
// errors). A Hugging Face config.json (file ending in .json) is accepted as
// is: keys kvsim does not use are ignored there, because HF adds keys with
// every release. Errors go to the node's LoadContext.
ModelSpec parse_model(const config::Node& node, bool lenient_unknown_keys);

// A multimodal config.json's text decoder (`text_config`), named and typed
// from the top level. parse_model calls it for a lenient file that has
// text_config and no top-level hidden_size.
ModelSpec parse_text_config(const config::Node& node);

// Loads a model file: YAML strictly, a `.json` file (a Hugging Face
// config.json) leniently. Errors go to ctx; check ctx.diagnostics.
ModelSpec load_model_file(const std::string& path, config::LoadContext& ctx);

// Reads `quantization_config` (HF) into m.quant and sets m.weights_dtype to
// the matching compute format. An unknown quant_method is an error at its key.
void read_quantization_config(const config::Node& node, ModelSpec& m);
// Reads the MoE, latent-attention and per-layer attention keys and applies
// the per-model_type defaults (only for absent keys, only when model_type is
// given). Called by parse_model.
void read_model_shape_extras(config::MapReader& r, ModelSpec& m, bool model_type_given);

// Bytes per element of a KV-cache dtype name: fp16, bf16 -> 2; int8, fp8
// (e4m3, as vLLM's `fp8`), fp8_e4m3, fp8_e5m2 -> 1; fp32 -> 4.
// Throws std::invalid_argument for any other name (validate with
// kKvDtypeNames first).
Bytes kv_dtype_bytes(const std::string& dtype);
inline const std::vector<std::string> kKvDtypeNames = {"fp16",     "bf16",     "int8", "fp8",
                                                       "fp8_e4m3", "fp8_e5m2", "fp32"};
// fp8: e4m3 linear weights with per-tensor scales (ModelOpt / llm-compressor
// FP8 checkpoints, TensorRT-LLM's and vLLM's `fp8`); fp4: NVFP4, e2m1 weights
// with one e4m3 scale per 16 (ModelOpt NVFP4). Both keep embeddings, the LM
// head and norms in 16-bit, as those exports do.
//
// w4a16 and w4 are Qualcomm AI Hub's two 4-bit LLM exports (ai-hub-models,
// qai_hub_models/models/common.py: Precision.w4a16 = (INT4 weights, INT16
// activations), Precision.w4 = (INT4 weights, no activation quantisation);
// _shared/llm/model.py _configure_quant_sim sets every activation quantizer
// of a w4 export to float16). The weights are stored alike (int4_weights());
// the activations are not, so the GEMMs take different HMX paths
// (devices/family_htp.cpp).
inline const std::vector<std::string> kWeightsDtypeNames = {"fp32",  "fp16", "bf16", "w8a8",
                                                            "w4a16", "w4",   "fp8",  "fp4"};

// Whether the linear weights are packed int4, two per byte, with one fp16
// scale per 128-weight group: w4a16 and w4.
inline bool int4_weights(const std::string& weights_dtype) {
  return weights_dtype == "w4a16" || weights_dtype == "w4";
}

}  // namespace kvsim
