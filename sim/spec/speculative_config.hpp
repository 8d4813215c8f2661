#pragma once
// `speculative:` (vLLM's speculative_config), the serving engine's
// speculative decoding: each running sequence proposes K drafts per step and
// the target verifies K + 1 tokens in one pass. sim/serve/speculative_spec.cpp
// declares the keys and reads them; sim/serve/speculation.hpp runs it.
#include <cstdint>
#include <optional>
#include <string>

#include "models/drafter_shape.hpp"
#include "sim/core/acceptance_model.hpp"

namespace kvsim {

// vLLM's `method` values (vllm/config/speculative.py): mtp runs the
// target's own multi-token-prediction layers (num_nextn_predict_layers);
// eagle and eagle3 a one-layer head on the target's hidden states; ngram
// looks the drafts up in the prompt (no device work, no weights, no KV);
// draft_model a smaller model of the same vocabulary.
enum class SpeculativeMethod : uint8_t { mtp, eagle, eagle3, ngram, draft_model };

struct SpeculativeConfig {
  bool on = false;  // the section is given and num_speculative_tokens > 0
  SpeculativeMethod method = SpeculativeMethod::mtp;
  std::string method_name;             // as vLLM names it (mtp, eagle3, ...)
  int64_t num_speculative_tokens = 0;  // K
  AcceptanceModel acceptance = AcceptanceModel::constant(0);
  // The drafter's shape (models/drafter_shape.hpp), resolved when the
  // section is read; none for ngram (drafts looked up on the host).
  std::optional<DrafterShape> drafter;
  // What it holds on the device: its weights and KV count in the pool's
  // sizing (PoolSizingInput::drafter_*), off or not (K = 0 loads none).
  bool holds_device_memory() const { return on && drafter.has_value(); }
};

}  // namespace kvsim
