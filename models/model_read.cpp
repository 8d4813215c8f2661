// Reading a model file (SPEC 4b): strict YAML or a lenient Hugging Face
// config.json, errors at file:line:col, cross-field checks in a second pass.
#include <fmt/format.h>

#include <algorithm>
#include <filesystem>

#include "base/checked_math.hpp"

#include "models/model_family_defaults.hpp"
#include "models/model_spec.hpp"

namespace kvsim {

namespace {

// Records a cross-field problem at `key` (or at the map when the key is absent).
void error_at_key(const config::Node& map, const std::string& key, std::string problem,
                  std::string allowed = {}) {
  const config::Node c = map.child_at(key);
  const config::Location where = c.raw().IsDefined() ? c.location() : map.location();
  map.context().diagnostics.error(where, c.path(), std::move(problem), std::move(allowed));
}

// `name` when absent: the file stem, or for a Hugging Face snapshot
// (`.../Meta-Llama-3-8B/config.json`) the folder name, since every such file
// is called config.json. A model written inline in a scenario gets
// "<stem>.<key path>".
std::string default_name(const config::Node& node) {
  const std::filesystem::path file(node.file());
  std::string stem = file.stem().string();
  if (stem == "config" && file.has_parent_path() && !file.parent_path().filename().empty())
    stem = file.parent_path().filename().string();
  if (stem.empty()) stem = "model";
  return node.path().empty() ? stem : stem + "." + node.path();
}

// Hugging Face `torch_dtype` (or `dtype`, its name since transformers 4.56)
// -> kvsim weights_dtype. Returns "" and records an error for other names.
std::string weights_dtype_from_torch(const config::Node& value) {
  const auto text = value.as_string();
  if (!text) return {};
  if (*text == "float16") return "fp16";
  if (*text == "bfloat16") return "bf16";
  if (*text == "float32") return "fp32";
  value.error(
      fmt::format("torch dtype '{}' has no kvsim weight format", *text),
      "float16, bfloat16, float32; or set weights_dtype: fp32|fp16|bf16|w8a8|w4a16|w4|fp8|fp4");
  return {};
}

// Second pass: relations between fields (DESIGN practice 5). Never corrects a
// value, only reports.
void check_model_shape(const config::Node& node, const ModelSpec& m, bool head_dim_given) {
  if (m.num_attention_heads % m.num_key_value_heads != 0) {
    error_at_key(node, "num_key_value_heads",
                 fmt::format("{} attention heads are not a multiple of {} KV heads",
                             m.num_attention_heads, m.num_key_value_heads),
                 "num_attention_heads % num_key_value_heads == 0 (grouped-query attention)");
  }
  if (!head_dim_given && m.hidden_size % m.num_attention_heads != 0) {
    error_at_key(node, "num_attention_heads",
                 fmt::format("hidden_size {} does not divide into {} heads, so head_dim cannot "
                             "be derived",
                             m.hidden_size, m.num_attention_heads),
                 "give head_dim explicitly");
    return;
  }
  const std::string head_dim_key = head_dim_given ? "head_dim" : "num_attention_heads";
  if (m.head_dim % 2 != 0) {
    error_at_key(node, head_dim_key, fmt::format("head_dim {} is odd", m.head_dim),
                 "an even head_dim (RoPE rotates pairs of dimensions)");
  }
  // Real models keep heads*head_dim within a small factor of hidden_size
  // (Qwen3-32B: 8192 vs 5120; Gemma-7B: 4096 vs 3072). A larger gap is a typo.
  if (m.q_dim() > 4 * m.hidden_size || 4 * m.q_dim() < m.hidden_size) {
    error_at_key(node, head_dim_key,
                 fmt::format("num_attention_heads * head_dim = {} * {} = {} is far from "
                             "hidden_size {}",
                             m.num_attention_heads, m.head_dim, m.q_dim(), m.hidden_size),
                 "hidden_size / 4 <= heads * head_dim <= 4 * hidden_size");
  }
}

// Sizes derived from the shape are int64 bytes. A bound on them, taken in
// double with every dimension at its widest, must stay within
// kMaxRepresentableBytes, so no product computed later can wrap: in-range
// but absurd dimensions are an error naming the limit, not negative weights.
void check_representable(const config::Node& node, const ModelSpec& m) {
  const double heads = static_cast<double>(m.num_attention_heads);
  const double width = std::max<double>(
      {static_cast<double>(m.hidden_size), static_cast<double>(m.q_dim()),
       static_cast<double>(m.intermediate_size), static_cast<double>(m.moe.expert_intermediate),
       static_cast<double>(m.moe.shared_intermediate), static_cast<double>(m.mla.q_lora_rank),
       static_cast<double>(m.mla.kv_lora_rank),
       heads * static_cast<double>(m.mla.qk_nope_head_dim + m.mla.qk_rope_head_dim +
                                   m.mla.v_head_dim)});
  const double layers = static_cast<double>(m.num_hidden_layers);
  const double experts = static_cast<double>(std::max<int64_t>(m.moe.experts, 0)) + 2;
  const double parameters =
      2 * static_cast<double>(m.vocab_size) * width + layers * 16 * width * width * experts;
  const double limit = static_cast<double>(kMaxRepresentableBytes);
  const double weight_bound = parameters * 4;  // at most 4 bytes per parameter (fp32)
  if (weight_bound > limit) {
    error_at_key(node, "num_hidden_layers",
                 fmt::format("these dimensions give weights of up to {:.3g} bytes, beyond the "
                             "{} kvsim can represent",
                             weight_bound, format_bytes(kMaxRepresentableBytes)),
                 "the dimensions of a real model (hidden_size, intermediate_size, "
                 "num_hidden_layers, vocab_size, experts)");
    return;
  }
  // KV bytes of the longest context: layers x 2 x width x 4 bytes x positions.
  const double kv_bound = layers * 2 * width * 4 * static_cast<double>(m.max_position_embeddings);
  if (kv_bound > limit)
    error_at_key(node, "max_position_embeddings",
                 fmt::format("a full context's KV cache could reach {:.3g} bytes, beyond the {} "
                             "kvsim can represent",
                             kv_bound, format_bytes(kMaxRepresentableBytes)),
                 "a shorter max_position_embeddings or narrower layers");
}

// The model's name when absent: `_name_or_path`'s last component in a saved
// HF config (lenient), else default_name().
std::string name_of(const config::Node& node, bool lenient_unknown_keys) {
  std::string name = default_name(node);
  if (lenient_unknown_keys) {
    // Saved HF configs carry the checkpoint path; its last component names the model.
    const config::Node name_or_path = node.child_at("_name_or_path");
    if (name_or_path.defined() && name_or_path.is_scalar() && !name_or_path.raw().Scalar().empty())
      name = std::filesystem::path(name_or_path.raw().Scalar()).filename().string();
  }
  return name;
}

}  // namespace

// Multimodal checkpoints (Gemma 3, Mistral 3, Llama 4) nest the text
// decoder's keys under `text_config`, with the checkpoint dtype and any
// quantization_config at the top. kvsim models the decoder, so it reads that
// block and takes name, dtype and quantisation from the top; the vision
// tower is not counted.
ModelSpec parse_text_config(const config::Node& node) {
  ModelSpec m = parse_model(node.child_at("text_config"), true);
  m.name = name_of(node, true);
  m.source = node.file();
  const config::Node quantization = node.child_at("quantization_config");
  const config::Node dtype = node.child_at("torch_dtype").defined() ? node.child_at("torch_dtype")
                                                                    : node.child_at("dtype");
  if (quantization.defined() && !m.quant.enabled()) {
    read_quantization_config(quantization, m);
  } else if (dtype.defined() && !m.quant.enabled()) {
    const std::string derived = weights_dtype_from_torch(dtype);
    if (!derived.empty()) m.weights_dtype = derived;
  }
  return m;
}

ModelSpec parse_model(const config::Node& node, bool lenient_unknown_keys) {
  ModelSpec m;
  if (lenient_unknown_keys && node.is_map() && !node.child_at("hidden_size").defined() &&
      node.child_at("text_config").is_map())
    return parse_text_config(node);
  config::MapReader r(node);
  if (!r.valid()) return m;
  config::Diagnostics& diagnostics = node.context().diagnostics;
  const size_t errors_before = diagnostics.size();

  constexpr int64_t kMaxWidth = int64_t{1} << 20;
  constexpr int64_t kMaxCount = int64_t{1} << 16;
  constexpr int64_t kMaxVocab = int64_t{1} << 24;
  m.hidden_size = r.integer("hidden_size", std::nullopt, 1, kMaxWidth);
  m.num_hidden_layers = r.integer("num_hidden_layers", std::nullopt, 1, kMaxCount);
  m.num_attention_heads = r.integer("num_attention_heads", std::nullopt, 1, kMaxCount);
  // HF rule: no num_key_value_heads means multi-head attention (one KV head per head).
  m.num_key_value_heads = r.integer("num_key_value_heads", m.num_attention_heads, 1, kMaxCount);
  const config::Node head_dim_node = r.child("head_dim");
  const bool head_dim_given = head_dim_node.defined();
  m.intermediate_size = r.integer("intermediate_size", std::nullopt, 1, kMaxWidth * 16);
  m.vocab_size = r.integer("vocab_size", std::nullopt, 1, kMaxVocab);
  m.max_position_embeddings =
      r.integer("max_position_embeddings", std::nullopt, 1, int64_t{1} << 30);
  m.rope_theta = r.number("rope_theta", 10000.0, 1.0, 1e12);
  m.rms_norm_eps = r.number("rms_norm_eps", 1e-5, 1e-12, 1.0);
  // A family's defaults apply only when the file names its model_type (HF
  // picks the config class by it) and only to absent keys.
  const bool model_type_given = r.has("model_type");
  m.model_type = r.string("model_type", "llama");
  const FamilyDefaults& family = family_defaults(model_type_given ? m.model_type : "");
  m.tie_word_embeddings = r.boolean("tie_word_embeddings", family.tie_word_embeddings);
  m.attention_bias = r.boolean("attention_bias", family.attention_bias);
  m.qk_norm = r.boolean("qk_norm", family.qk_norm);
  m.rope_style = r.choice("rope_style", "rotate_half", {"rotate_half", "adjacent_pairs"});
  // DeepSeek-V3/R1's multi-token-prediction modules (config.json
  // num_nextn_predict_layers): decoder layers kept apart from the main
  // stack, read by speculative method mtp (sim/serve/drafter.hpp).
  m.num_nextn_predict_layers = r.integer("num_nextn_predict_layers", 0, 0, 16);

  if (head_dim_given) {
    m.head_dim = head_dim_node.as_int(1, kMaxCount).value_or(0);
  } else if (family.head_dim) {
    m.head_dim = *family.head_dim;
  } else if (m.num_attention_heads > 0) {
    m.head_dim = m.hidden_size / m.num_attention_heads;
  }
  read_model_shape_extras(r, m, model_type_given);

  // weights_dtype wins; otherwise a quantization_config; otherwise the HF
  // checkpoint's dtype; otherwise fp16.
  const config::Node torch_dtype = r.child("torch_dtype");
  const config::Node hf_dtype = r.child("dtype");
  const config::Node quantization = r.child("quantization_config");
  if (r.child("weights_dtype").defined()) {
    m.weights_dtype = r.choice("weights_dtype", std::nullopt, kWeightsDtypeNames);
    if (quantization.defined())
      quantization.error("the weight format is given twice (weights_dtype and quantization_config)",
                         "one of them");
  } else if (quantization.defined()) {
    read_quantization_config(quantization, m);
  } else if (torch_dtype.defined() || hf_dtype.defined()) {
    const std::string derived =
        weights_dtype_from_torch(torch_dtype.defined() ? torch_dtype : hf_dtype);
    m.weights_dtype = derived.empty() ? "fp16" : derived;
  } else {
    m.weights_dtype = "fp16";
  }

  if (lenient_unknown_keys) r.declare("_name_or_path");
  m.name = r.string("name", name_of(node, lenient_unknown_keys));
  m.source = r.string("source", node.file());

  // Cross-field checks only on values that read cleanly, so one typo does
  // not cascade into several messages.
  if (diagnostics.size() == errors_before)
    check_model_shape(node, m, head_dim_given || family.head_dim.has_value());
  if (diagnostics.size() == errors_before) check_representable(node, m);
  if (!lenient_unknown_keys) r.finish();
  return m;
}

ModelSpec load_model_file(const std::string& path, config::LoadContext& ctx) {
  const YAML::Node doc = config::load_file(path, ctx);
  if (!doc.IsDefined()) return {};
  const bool is_hf_config = std::filesystem::path(path).extension() == ".json";
  return parse_model(config::Node(doc, "", path, &ctx), is_hf_config);
}

}  // namespace kvsim
