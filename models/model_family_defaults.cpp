#include "models/model_family_defaults.hpp"

#include <map>

namespace kvsim {

namespace {

FamilyDefaults gemma(int64_t norms, bool qk_norm, SlidingLayout layout, int64_t pattern) {
  FamilyDefaults f;
  f.tie_word_embeddings = true;  // GemmaConfig, Gemma2Config, Gemma3TextConfig
  f.head_dim = 256;              // their head_dim default
  f.norms_per_layer = norms;     // Gemma 2/3: pre/post norms around attention and MLP
  f.qk_norm = qk_norm;           // Gemma 3 normalises q and k per head
  f.sliding_layout = layout;
  if (layout != SlidingLayout::none) f.sliding_window = 4096;  // Gemma2/Gemma3TextConfig
  f.sliding_window_pattern = pattern;
  return f;
}

FamilyDefaults qwen(bool bias, bool qk_norm) {
  FamilyDefaults f;
  f.attention_bias = bias;  // Qwen2 projects q/k/v with a bias; its config.json does not say so
  f.qk_norm = qk_norm;      // Qwen3 normalises q and k per head
  f.sliding_layout = SlidingLayout::from_max_window_layers;
  return f;
}

FamilyDefaults mistral(std::optional<int64_t> window) {
  FamilyDefaults f;
  f.sliding_layout = SlidingLayout::every_layer;
  f.sliding_window = window;  // MistralConfig: 4096; MixtralConfig: None
  return f;
}

const std::map<std::string, FamilyDefaults>& family_defaults_table() {
  static const std::map<std::string, FamilyDefaults> t = {
      {"gemma", gemma(2, false, SlidingLayout::none, 0)},
      {"gemma2", gemma(4, false, SlidingLayout::all_but_every_nth, 2)},
      {"gemma3", gemma(4, true, SlidingLayout::all_but_every_nth, 6)},
      {"gemma3_text", gemma(4, true, SlidingLayout::all_but_every_nth, 6)},
      {"qwen2", qwen(true, false)},
      {"qwen2_moe", qwen(true, false)},
      {"qwen3", qwen(false, true)},
      {"qwen3_moe", qwen(false, true)},
      {"mistral", mistral(4096)},
      {"mixtral", mistral(std::nullopt)},
  };
  return t;
}

}  // namespace

const FamilyDefaults& family_defaults(const std::string& model_type) {
  static const FamilyDefaults plain;
  const auto& t = family_defaults_table();
  const auto it = t.find(model_type);
  return it == t.end() ? plain : it->second;
}

}  // namespace kvsim
