#include "sim/policies/paged_pool_spec.hpp"

#include "kernels/kv_layout.hpp"
#include "sim/cache/eviction/eviction_registry.hpp"

namespace kvsim {

std::vector<config::ParamSpec> paged_pool_params() {
  using namespace config;
  return {
      int_param("block_size", 128, 1, 1 << 16, "tokens", "tokens per KV block (seed 001)"),
      choice_param("layout", std::string("ksana"), kv_layout_names(),
                   "how a block's K and V sit in memory; some layouts refuse some shapes"),
      choice_param("preemption", std::string("recompute"), {"recompute", "swap"},
                   "what a preempted sequence loses: its blocks are recomputed or swapped to host"),
      // vLLM's default swap_space, 4 GiB per rank.
      bytes_param("swap_space", 4LL << 30, 0, 1LL << 50, "host memory per rank for swapped blocks"),
      optional_param(bytes_param("activation_reserve", 0, 0, 1LL << 50,
                                 "device memory kept for activations (default: derived from "
                                 "max_batched_tokens and max_num_seqs)")),
      // The pools own their eviction order (sim/cache/eviction/).
      choice_param("eviction", std::string(kDefaultEvictionOrder), eviction_order_names(),
                   "which free cached block (prefix cache) or chunk (chunk_lru) is reused first"),
  };
}

PagedPoolSettings PagedPoolSettings::from(const config::ParamValues& v) {
  PagedPoolSettings s;
  s.block_size = v.integer("block_size");
  s.layout = v.string("layout");
  s.swap = v.string("preemption") == "swap";
  s.swap_space = v.integer("swap_space");
  if (v.has("activation_reserve")) s.activation_reserve = v.integer("activation_reserve");
  s.eviction = v.string("eviction");
  return s;
}

void PagedPoolSettings::fill(PoolSizingInput& in) const {
  in.block_size = block_size;
  in.swap_space = swap_space;
  in.activation_reserve = activation_reserve;
}

}  // namespace kvsim
