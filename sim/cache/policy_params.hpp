#pragma once
// The parameters each cache policy declares (base/params.hpp), one function
// per policy, defined in that policy's own file beside the code that uses
// the values. policy_registry.cpp lists them; the `kv_cache:` section reads
// the chosen policy's keys through them, and CacheConfig takes its defaults
// from them (the only place a default of a kv_cache key is written).
#include <vector>

#include "base/params.hpp"

namespace kvsim {

// A paged block pool's keys (block size, layout, preemption, swap, reserve):
// paged declares them with prefix_caching; chunk_lru's main pool is such a
// pool (paged_policy.cpp).
std::vector<config::ParamSpec> paged_pool_params();
config::ComponentInfo paged_policy_info();  // paged_policy.cpp

config::ComponentInfo chunk_lru_policy_info();  // chunk_lru_policy.cpp

// What every Genie update mode (seed 002) reads: ctx_size, the AR-n
// variants, the update threads (genie_mode_policy.cpp).
std::vector<config::ParamSpec> genie_buffer_params();
config::ComponentInfo shift_concat_policy_info();   // shift_concat_policy.cpp
config::ComponentInfo pointer_shift_policy_info();  // pointer_shift_policy.cpp
config::ComponentInfo smart_mask_policy_info();     // smart_mask_policy.cpp

// sliding_window's own keys (update_mode, window); it also takes the keys of
// the policy update_mode names (sliding_window_policy.cpp).
config::ComponentInfo sliding_window_policy_info();

// llama.cpp's cell cache (seed 004): the Genie buffer keys plus type_k,
// type_v, v_trans, n_keep, n_discard, defrag_thold, n_gpu_layers
// (llama_cells_policy.cpp).
config::ComponentInfo llama_cells_policy_info();
inline constexpr const char* kSlidingWindowBaseKey = "update_mode";

}  // namespace kvsim
