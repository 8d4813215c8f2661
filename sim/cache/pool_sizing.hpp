#pragma once
// Sizing of the paged KV pool from a memory budget (SPEC 6, the nano-vllm
// formula of seed 001, per tensor-parallel rank):
//   block_bytes = 2 * layers * block_size * (kv_heads / tp) * head_dim * dtype_bytes
//   num_blocks  = floor((memory * memory_fraction - weights_per_rank - activation_reserve)
//                       / block_bytes)
#include <cstdint>
#include <optional>
#include <vector>

#include "base/units.hpp"
#include "models/model_spec.hpp"
#include "sim/cache/kv_cache_groups.hpp"

namespace kvsim {

struct PoolSizingInput {
  Bytes device_memory = 0;
  // Filled from the scenario (ScenarioSpec::pool_input); the defaults are
  // the kv_cache declarations', not written here again.
  double memory_fraction = 0;
  int64_t tp = 1;
  int64_t ep = 1;  // expert parallelism: routed experts split whole over ep ranks
  // Pipeline stages (models/pipeline_stages.hpp): each stage's tp devices hold
  // its layers' weights and KV; the pool has as many blocks as the
  // most-loaded stage can hold (vLLM takes the minimum block count over its
  // workers).
  int64_t pp = 1;
  std::vector<int64_t> pipeline_layers;  // layers per stage; empty: vLLM's split
  int64_t block_size = 0;
  Bytes kv_dtype_bytes = 2;
  int64_t max_batched_tokens = 8192;
  int64_t max_num_seqs = 256;
  std::optional<Bytes> activation_reserve;  // overrides the derived estimate
  Bytes swap_space = 0;                     // host bytes per rank for swapped blocks
  // chunk_lru (seed 003): a second pool of chunk_pool_fraction x device
  // memory, KV only, beside the main pool (whose fraction is memory_fraction).
  double chunk_pool_fraction = 0;
  // The policy keeps a KV cache group per attention type (paged, as vLLM's
  // hybrid allocator): on a model with sliding and full layers the pool's
  // blocks are pages of KvCacheGroups::page_layers layers.
  bool kv_groups_by_attention = false;
  // A speculative drafter (sim/spec/speculative_config.hpp) on the last
  // stage: its weights beside the model's, and its layers' KV in every
  // block beside the model's, as vLLM's KV cache config gives the draft
  // layers pages of the same block table. Per rank; 0 without one.
  Bytes drafter_weight_bytes = 0;
  Bytes drafter_kv_bytes_per_token = 0;
};

// Per-device figures are those of one device of the binding stage (the
// stage that holds the fewest blocks; the only stage when pp = 1).
struct PoolSizing {
  Bytes kv_bytes_per_token = 0;     // per rank
  Bytes block_bytes = 0;            // per rank
  Bytes weights_bytes = 0;          // per rank, the drafter's included
  Bytes drafter_weights_bytes = 0;  // per rank: the speculative drafter's part of weights_bytes
  Bytes drafter_kv_bytes_per_token = 0;  // per rank: its part of kv_bytes_per_token
  Bytes activation_reserve = 0;          // per rank
  Bytes budget = 0;                      // memory * fraction
  Bytes kv_budget = 0;                   // budget - weights - activations (may be negative)
  int64_t num_blocks = 0;                // 0 when nothing fits
  int64_t capacity_tokens = 0;           // num_blocks * block_size
  int64_t host_blocks = 0;               // swap_space / block_bytes
  int64_t chunk_pool_blocks = 0;         // floor(memory * chunk_pool_fraction / block_bytes)
  Bytes chunk_pool_bytes = 0;            // chunk_pool_blocks * block_bytes
  bool chunk_pool = false;               // the input asked for one (chunk_pool_fraction > 0)
  // hybrid() when the pool is split by attention type: block_bytes is then
  // one page (page_layers layers), num_blocks counts pages, and
  // capacity_tokens is what the pages hold when every group keeps every token.
  KvCacheGroups groups;

  // Blocks (pages) a sequence of `tokens` tokens may need at once.
  int64_t blocks_for_sequence(int64_t tokens, int64_t block_size) const {
    return groups.hybrid() ? groups.pages_at_most(tokens, block_size)
                           : (tokens + block_size - 1) / block_size;
  }
  int64_t binding_stage = 0;  // the stage the figures above are of
  int64_t stage_layers = 0;   // its decoder layers (all of them when pp = 1)
  // One block of the whole instance: every layer's share on every rank
  // (block_bytes x tp when pp = 1), what a tier below HBM stores per block.
  Bytes instance_block_bytes = 0;
};

// Peak activation memory of one forward step, the part of device memory the
// KV pool must leave free (nano-vllm measures it with a warm-up run; we
// derive it): the widest live set of a decoder layer at max_batched_tokens,
// residual + hidden + gate/up + activated MLP, plus fp32 logits for every
// sequence: T * (2*hidden + 3*intermediate/tp) * act_bytes + S * vocab/tp * 4.
// A pipeline stage without the LM head (with_logits false) has no logits.
Bytes derived_activation_reserve(const ModelSpec& model, int64_t tp, int64_t max_batched_tokens,
                                 int64_t max_num_seqs, bool with_logits = true);

PoolSizing size_paged_pool(const ModelSpec& model, const PoolSizingInput& in);

}  // namespace kvsim
