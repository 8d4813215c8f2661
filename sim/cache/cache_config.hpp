#pragma once
// The `kv_cache:` section of a scenario: which policy and how it is sized.
#include <optional>
#include <string>
#include <vector>

#include "base/units.hpp"

namespace kvsim {

struct CacheConfig {
  std::string policy = "paged";
  std::string dtype = "fp16";
  int64_t block_size = 128;
  double memory_fraction = 0.9;
  bool prefix_caching = true;
  std::string layout = "ksana";
  std::string preemption = "recompute";
  Bytes swap_space = 4LL << 30;  // vLLM's default swap_space, 4 GiB per rank
  std::optional<Bytes> activation_reserve;

  // On-device (HTP) family, seed 002: shift_concat | pointer_shift | smart_mask,
  // and sliding_window on top of one of them (update_mode) or of paged.
  int64_t ctx_size = 4096;                       // tokens per Genie KV buffer
  std::vector<int64_t> ar_variants{1, 32, 128};  // AR-n graphs the model ships
  std::string update_mode = "pointer_shift";     // sliding_window: what it wraps
  int64_t window = 0;                            // sliding_window: tokens kept (0: none)
  int64_t update_threads = 4;                    // CPU threads splitting KV updates
  // pointer_shift: extra columns per buffer row beyond cache_dim, so the view
  // can slide right before a compaction (0: as many as cache_dim, the kernel's
  // default of a 2x row).
  int64_t pointer_shift_headroom = 0;

  // chunk_lru, seed 003: pools as fractions of device memory.
  double main_pool_fraction = 0.70;
  double chunk_pool_fraction = 0.15;  // the remaining reserve stays free
  int64_t virtual_pos_start = 4096;   // where missed chunks are computed
  int64_t max_chunks = 1 << 20;
  int64_t max_chunk_tokens = 32768;
};

}  // namespace kvsim
