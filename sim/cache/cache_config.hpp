#pragma once
// The `kv_cache:` section of a scenario as resolved values: the shared keys
// (policy, dtype, memory_fraction) and the keys of every policy family.
// Nothing here has a default of its own: a CacheConfig starts with the
// default each key's declaration gives (kv_cache_section_info() and the
// policies' infos, sim/cache/policy_params.hpp), and the section reader
// assigns what the chosen policy read. A key the chosen policy does not own
// is refused when read, so its field keeps the declared default.
#include <optional>
#include <string>
#include <vector>

#include "base/params.hpp"
#include "base/units.hpp"

namespace kvsim {

struct CacheConfig {
  CacheConfig();  // every field at its declared default

  // Sets the field of every key in `values` (read_params of kv_cache keys).
  // Throws std::logic_error for a key no field takes (a declaration
  // without a field is a bug, not input).
  void assign(const config::ParamValues& values);
  // The value of a text key ("update_mode"); std::logic_error for a key
  // that has no text field.
  const std::string& text(std::string_view key) const;

  // Shared by every policy.
  std::string policy;
  std::string dtype;
  std::string kv_scale;  // fp8: per_token | per_tensor
  double memory_fraction;

  // A paged pool (paged, chunk_lru's main pool, sliding_window over paged).
  int64_t block_size;
  bool prefix_caching;
  std::string layout;
  std::string preemption;
  Bytes swap_space;
  std::optional<Bytes> activation_reserve;  // none: derived (pool_sizing)
  std::string eviction;                     // which free cached block or chunk goes first

  // Genie's update modes (seed 002): shift_concat | pointer_shift |
  // smart_mask, and sliding_window on top of one of them or of paged.
  int64_t ctx_size;                  // tokens per Genie KV buffer
  std::vector<int64_t> ar_variants;  // AR-n graphs the model ships
  int64_t update_threads;            // CPU threads splitting KV updates
  int64_t pointer_shift_headroom;    // pointer_shift: extra columns per row (0: ctx_size)
  std::string update_mode;           // sliding_window: what it wraps
  int64_t window;                    // sliding_window: tokens kept

  // llama_cells, seed 004: llama.cpp's cache types and context shift.
  std::string type_k, type_v;
  bool v_trans;
  int64_t n_keep, n_discard;
  double defrag_thold;
  int64_t n_gpu_layers;

  // chunk_lru, seed 003: pools as fractions of device memory.
  double main_pool_fraction;
  double chunk_pool_fraction;
  int64_t virtual_pos_start;  // where missed chunks are computed
  int64_t max_chunks;
  int64_t max_chunk_tokens;
};

}  // namespace kvsim
