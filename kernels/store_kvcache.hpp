#pragma once
// store_kvcache (seed 001, nano-vllm's Triton kernel): token i's K and V rows
// go to slot slot_mapping[i] = block * block_tokens + offset of the pool;
// slot -1 means "not stored" (a prefix-cache hit's token, or padding).
#include <cstdint>
#include <span>
#include <vector>

#include "kernels/kv_pool.hpp"

namespace kvsim::kernels {

// k, v: [n, kv_heads, head_dim] with n = slot_mapping.size().
void store_kvcache(KvPool& pool, int64_t layer, const float* k, const float* v,
                   std::span<const int64_t> slot_mapping);

// store_kvcache through the ATB kcache/vcache view (seed 000, ATB's
// ReshapeAndCache): slot atb_slots[i] = atb id * block_tokens + offset,
// the id carrying the layer (slot_mapping_for over a layer's
// atb_block_table). Slot -1: not stored.
void store_kvcache_atb(KvPool& pool, const float* k, const float* v,
                       std::span<const int64_t> atb_slots);

// Slot of each position in [first, first + n) of a sequence with this block table.
std::vector<int64_t> slot_mapping_for(std::span<const int32_t> block_table, int64_t block_tokens,
                                      int64_t first, int64_t n);

}  // namespace kvsim::kernels
