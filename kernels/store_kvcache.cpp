#include "kernels/store_kvcache.hpp"

#include <stdexcept>

namespace kvsim::kernels {

void store_kvcache(KvPool& pool, int64_t layer, const float* k, const float* v,
                   std::span<const int64_t> slot_mapping) {
  const int64_t hd = pool.kv_heads() * pool.head_dim();
  const int64_t bt = pool.block_tokens();
  for (size_t i = 0; i < slot_mapping.size(); ++i) {
    const int64_t slot = slot_mapping[i];
    if (slot == -1) continue;
    if (slot < 0 || slot >= pool.num_blocks() * bt)
      throw std::out_of_range("store_kvcache: slot outside the pool");
    for (int64_t h = 0; h < pool.kv_heads(); ++h) {
      const int64_t src = static_cast<int64_t>(i) * hd + h * pool.head_dim();
      pool.write_row(slot / bt, KvPart::key, layer, slot % bt, h, k + src);
      pool.write_row(slot / bt, KvPart::value, layer, slot % bt, h, v + src);
    }
  }
}

void store_kvcache_atb(KvPool& pool, const float* k, const float* v,
                       std::span<const int64_t> atb_slots) {
  const int64_t hd = pool.kv_heads() * pool.head_dim();
  const int64_t bt = pool.block_tokens();
  for (size_t i = 0; i < atb_slots.size(); ++i) {
    const int64_t slot = atb_slots[i];
    if (slot == -1) continue;
    if (slot < 0) throw std::out_of_range("store_kvcache_atb: negative slot");
    // atb_write_row checks the id against the view.
    for (int64_t h = 0; h < pool.kv_heads(); ++h) {
      const int64_t src = static_cast<int64_t>(i) * hd + h * pool.head_dim();
      pool.atb_write_row(KvPart::key, slot / bt, slot % bt, h, k + src);
      pool.atb_write_row(KvPart::value, slot / bt, slot % bt, h, v + src);
    }
  }
}

std::vector<int64_t> slot_mapping_for(std::span<const int32_t> block_table, int64_t block_tokens,
                                      int64_t first, int64_t n) {
  std::vector<int64_t> slots(static_cast<size_t>(n));
  for (int64_t i = 0; i < n; ++i) {
    const int64_t p = first + i;
    const auto b = static_cast<size_t>(p / block_tokens);
    if (b >= block_table.size())
      throw std::out_of_range("slot_mapping_for: position past the block table");
    slots[static_cast<size_t>(i)] =
        static_cast<int64_t>(block_table[b]) * block_tokens + p % block_tokens;
  }
  return slots;
}

}  // namespace kvsim::kernels
