#pragma once
// `lfu`: the evictable entry used least often goes first; among entries used
// equally often, the one that became evictable or was used longest ago (LRU
// tie-break, as in Shah, Mitra and Matani's O(1) LFU). An entry's count is
// the hits it got since it took its current content (a block reused for new
// content starts again at 0), so a block never hit is reused before any hit
// one, and a prefix shared by many requests outlives one used once.
//
// Counts saturate at `max_count` (one bucket per count, a bit mask of the
// non-empty ones): pop_victim finds the lowest non-empty bucket with one
// instruction, so every call is O(1). Saturating counters are what TinyLFU
// and Caffeine use too (4-bit counts).
#include <cstdint>
#include <vector>

#include "base/params.hpp"
#include "sim/cache/eviction/eviction_order.hpp"
#include "sim/cache/eviction/id_lists.hpp"

namespace kvsim {

class LfuOrder final : public EvictionOrder {
 public:
  static constexpr int kMaxCount = 63;  // one bit per bucket in a 64-bit mask

  std::string_view name() const override { return "lfu"; }
  void on_evictable(EvictableId id) override;
  void on_pinned(EvictableId id) override;
  // +1 (saturating); an evictable entry moves to the newest end of its new bucket.
  void on_access(EvictableId id) override;
  // Oldest entry of the lowest count; its count resets for the next content.
  EvictableId pop_victim() override;
  // New content counts from 0 (a chunk pool reuses ids after clear()).
  void on_content(EvictableId id, uint64_t key) override;
  std::vector<EvictableId> victims_in_order() const override;

  int count(EvictableId id) const;

 private:
  int& count_of(EvictableId id);
  void push(EvictableId id);
  void remove(EvictableId id);

  IdLists buckets_{kMaxCount + 1};
  std::vector<int> counts_;
  uint64_t non_empty_ = 0;  // bit c: bucket c has an entry
};

config::ComponentInfo lfu_order_info();

}  // namespace kvsim
