// Reading the parts of a model shape beyond a dense decoder (MoE, latent
// attention, per-layer attention kinds) and the per-architecture defaults
// Hugging Face applies when a config.json leaves a key out (SPEC 4b).
#include <fmt/format.h>

#include <map>

#include "models/model_family_defaults.hpp"
#include "models/model_spec.hpp"

namespace kvsim {

namespace {

constexpr int64_t kMaxCount = int64_t{1} << 16;
constexpr int64_t kMaxWidth = int64_t{1} << 24;

// The first of several HF spellings of one quantity that the file gives
// (non-null), or "" when none.
std::string first_given(config::MapReader& r, std::initializer_list<const char*> keys) {
  for (const char* key : keys)
    if (r.child(key).defined()) return key;
  return {};
}

void read_moe(config::MapReader& r, ModelSpec& m) {
  const std::string experts_key =
      first_given(r, {"num_local_experts", "num_experts", "n_routed_experts"});
  // Declared so a strict file may carry them; they only mean something with experts.
  for (const char* key : {"num_experts_per_tok", "moe_intermediate_size", "n_shared_experts",
                          "shared_expert_intermediate_size", "first_k_dense_replace",
                          "decoder_sparse_step", "moe_layer_freq", "mlp_only_layers"})
    r.declare(key);
  if (experts_key.empty()) return;
  MoeShape& e = m.moe;
  e.experts = r.integer(experts_key, std::nullopt, 1, kMaxCount);
  e.experts_per_token = r.integer("num_experts_per_tok", std::nullopt, 1, e.experts);
  e.expert_intermediate = r.integer("moe_intermediate_size", m.intermediate_size, 1, kMaxWidth);
  if (r.child("shared_expert_intermediate_size").defined()) {
    // Qwen2-MoE: one shared expert of this width, behind a sigmoid gate.
    e.shared_intermediate =
        r.integer("shared_expert_intermediate_size", std::nullopt, 0, kMaxWidth);
    e.shared_expert_gate = e.shared_intermediate > 0;
  } else {
    // DeepSeek: n_shared_experts experts of moe_intermediate_size, fused.
    e.shared_intermediate = r.integer("n_shared_experts", 0, 0, kMaxCount) * e.expert_intermediate;
  }
  e.first_dense_layers = r.integer("first_k_dense_replace", 0, 0, m.num_hidden_layers);
  e.sparse_step = r.integer("decoder_sparse_step", 1, 1, kMaxCount);
  e.layer_freq = r.integer("moe_layer_freq", 1, 1, kMaxCount);
  const config::Node only = r.child("mlp_only_layers");
  if (only.defined()) {
    if (!only.is_sequence()) {
      only.error("must be a list of layer indices", "e.g. [] or [0, 1]");
    } else {
      for (const config::Node& item : only.items())
        if (auto v = item.as_int(0, m.num_hidden_layers - 1)) e.dense_layers.push_back(*v);
    }
  }
}

void read_mla(config::MapReader& r, ModelSpec& m) {
  for (const char* key : {"q_lora_rank", "qk_rope_head_dim", "qk_nope_head_dim", "v_head_dim"})
    r.declare(key);
  if (!r.child("kv_lora_rank").defined()) return;
  MlaShape& a = m.mla;
  a.kv_lora_rank = r.integer("kv_lora_rank", std::nullopt, 1, kMaxWidth);
  // DeepSeek-V2-Lite has q_lora_rank null: q is projected from the hidden state directly.
  a.q_lora_rank = r.integer("q_lora_rank", 0, 0, kMaxWidth);
  a.qk_rope_head_dim = r.integer("qk_rope_head_dim", std::nullopt, 1, kMaxCount);
  a.qk_nope_head_dim = r.integer("qk_nope_head_dim", std::nullopt, 1, kMaxCount);
  a.v_head_dim = r.integer("v_head_dim", std::nullopt, 1, kMaxCount);
}

// `layer_types` (transformers >= 4.53) names every layer's attention; without
// it, the family's rule places the sliding layers.
void read_layer_attention(config::MapReader& r, ModelSpec& m, const FamilyDefaults& family,
                          bool model_type_given) {
  const int64_t layers = m.num_hidden_layers;
  m.layer_attention.assign(static_cast<size_t>(std::max<int64_t>(layers, 0)), LayerAttention{});
  for (const char* key : {"sliding_window", "use_sliding_window", "max_window_layers",
                          "sliding_window_pattern", "layer_types"})
    r.declare(key);
  const config::Node types = r.child("layer_types");
  const SlidingLayout layout = family.sliding_layout;
  if (!types.defined() && layout == SlidingLayout::none) return;

  // Qwen: the window applies only with use_sliding_window (false in every
  // released Qwen2.5/Qwen3 config).
  if (layout == SlidingLayout::from_max_window_layers && !types.defined() &&
      !r.boolean("use_sliding_window", false))
    return;
  const bool window_given = r.child("sliding_window").defined();
  const std::optional<int64_t> window_default =
      model_type_given && !r.has("sliding_window") ? family.sliding_window : std::nullopt;
  if (!window_given && !window_default) {
    if (types.defined())
      for (const config::Node& t : types.items())
        if (t.as_string() == "sliding_attention") {
          r.child("sliding_window")
              .error("sliding_attention layers need a sliding_window", "a window in tokens");
          return;
        }
    return;  // null window (Mistral v0.2+, Mixtral): every layer is full
  }
  const int64_t window = window_given
                             ? r.integer("sliding_window", std::nullopt, 1, int64_t{1} << 30)
                             : *window_default;

  std::vector<bool> sliding(m.layer_attention.size(), false);
  if (types.defined()) {
    const auto items = types.items();
    if (!types.is_sequence() || static_cast<int64_t>(items.size()) != layers) {
      types.error(fmt::format("must list one attention kind per layer ({} layers)", layers),
                  "full_attention | sliding_attention, one per layer");
      return;
    }
    for (size_t i = 0; i < items.size(); ++i)
      sliding[i] = items[i].as_choice({"full_attention", "sliding_attention"}).value_or("") ==
                   "sliding_attention";
  } else {
    const int64_t pattern =
        layout == SlidingLayout::all_but_every_nth
            ? r.integer("sliding_window_pattern", family.sliding_window_pattern, 1, kMaxCount)
            : 0;
    const int64_t max_window_layers = layout == SlidingLayout::from_max_window_layers
                                          ? r.integer("max_window_layers", layers, 0, kMaxCount)
                                          : 0;
    for (int64_t i = 0; i < layers; ++i) {
      switch (layout) {
        case SlidingLayout::every_layer:
          sliding[i] = true;
          break;
        case SlidingLayout::all_but_every_nth:
          sliding[i] = (i + 1) % pattern != 0;
          break;
        case SlidingLayout::from_max_window_layers:
          sliding[i] = i >= max_window_layers;
          break;
        case SlidingLayout::none:
          break;
      }
    }
  }
  for (size_t i = 0; i < sliding.size(); ++i)
    if (sliding[i]) m.layer_attention[i] = LayerAttention{true, window};
}

}  // namespace

void read_model_shape_extras(config::MapReader& r, ModelSpec& m, bool model_type_given) {
  const FamilyDefaults& family = family_defaults(model_type_given ? m.model_type : "");
  m.norms_per_layer = model_type_given ? family.norms_per_layer : 2;
  read_moe(r, m);
  read_mla(r, m);
  read_layer_attention(r, m, family, model_type_given);
}

}  // namespace kvsim
