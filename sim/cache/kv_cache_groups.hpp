#pragma once
// The KV cache groups of a model that mixes sliding-window and full
// attention layers, laid out as vLLM's hybrid KV cache manager does (vLLM
// docs, design/hybrid_kv_cache_manager: "Hybrid KV Cache Manager"): every
// block of the one shared pool is a page of `page_layers` layers x
// block_size tokens; the full-attention layers form one group whose table
// covers every token, the sliding layers `sliding_groups` groups of
// page_layers each whose tables hold only the window (plus the partial
// block). A sliding group with fewer layers than page_layers wastes the
// rest of its pages, as vLLM's padding does.
//
// Choices where vLLM differs or the model is unusual:
//  - page_layers is the number of full-attention layers, so the full
//    layers are exactly one group (vLLM takes the smaller layer count and
//    may make several full groups; with one full group its prefix-cache
//    hashes live in one table). gemma-2 (21 + 21) and gemma-3 (1 full in 6)
//    come out as vLLM lays them out.
//  - Sliding layers with different windows keep the largest one.
//  - A model whose layers are all sliding, or all full, has no groups: one
//    pool of whole-model blocks as before (not hybrid()).
#include <cstdint>

#include "base/units.hpp"
#include "models/model_spec.hpp"

namespace kvsim {

struct KvCacheGroups {
  int64_t page_layers = 0;     // layers one block (page) holds
  int64_t full_groups = 0;     // 1 when hybrid
  int64_t sliding_groups = 0;  // ceil(sliding layers / page_layers)
  int64_t window = 0;          // tokens a sliding layer attends (and keeps)

  bool hybrid() const { return full_groups > 0 && sliding_groups > 0; }
  // Pages a sequence holds after `tokens` computed tokens, between steps:
  // every block in the full group, and in each sliding group the blocks
  // from the one holding position tokens + 1 - window on.
  int64_t pages_held(int64_t tokens, int64_t block_size) const;
  // Pages a sequence of `tokens` tokens may need at once: a prefill chunk
  // is allocated whole in every group before the window frees any of it.
  int64_t pages_at_most(int64_t tokens, int64_t block_size) const;
};

// The groups of `model`: hybrid() only when it has both kinds of layers.
KvCacheGroups kv_cache_groups(const ModelSpec& model);

}  // namespace kvsim
