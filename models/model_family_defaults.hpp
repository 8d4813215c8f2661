#pragma once
// What Hugging Face assumes for a `model_type` when its config.json leaves a
// key out (the defaults of each transformers *Config class). kvsim applies a
// family's defaults only when the file names its model_type, and only to
// absent keys; a value in the file always wins.
#include <cstdint>
#include <optional>
#include <string>

namespace kvsim {

// Which layers a family's sliding window applies to, when `layer_types` does
// not list them.
enum class SlidingLayout : uint8_t {
  none,                    // the family has no sliding window (Llama, DeepSeek)
  every_layer,             // Mistral, Mixtral: every layer, when sliding_window is set
  all_but_every_nth,       // Gemma 2 (n = 2), Gemma 3 (sliding_window_pattern, 6):
                           // layer i slides unless (i + 1) % n == 0
  from_max_window_layers,  // Qwen2/3 with use_sliding_window: layers i >= max_window_layers
};

struct FamilyDefaults {
  bool tie_word_embeddings = false;
  std::optional<int64_t> head_dim;  // when absent, hidden_size / heads (HF rule)
  bool attention_bias = false;      // q/k/v carry a bias
  bool qk_norm = false;             // per-head RMSNorm on q and k
  int64_t norms_per_layer = 2;
  SlidingLayout sliding_layout = SlidingLayout::none;
  std::optional<int64_t> sliding_window;  // default window, when the key is absent
  int64_t sliding_window_pattern = 0;     // n of all_but_every_nth
};

// Defaults of `model_type`; a type kvsim has no table for gets the plain
// Llama defaults (no bias, no q/k norm, two norms, no sliding window).
const FamilyDefaults& family_defaults(const std::string& model_type);

}  // namespace kvsim
