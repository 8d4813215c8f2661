#pragma once
// `lru`: the least recently freed or used entry goes first. For a block pool
// this is vLLM's prefix-cache free queue (seeds 000 and 001): a freed block
// goes to the tail, allocation takes the head, so blocks never cached and
// cached-but-free blocks are reused in the order they were freed, and a fresh
// pool hands out blocks in id order. For the chunk pool it is seed 003's
// ChunkHashIndex LRU: an inserted or hit chunk goes to the most recent end.
//
// A queue in one array, oldest first, in which an entry that leaves the
// evictable set or moves to the recent end is only marked gone (its id's
// position no longer points at it) and skipped when the oldest end reaches
// it; the array is compacted once the gone entries outnumber the live ones,
// so every call is O(1) amortised. Unlike a linked list, taking many victims
// in a row reads the array in order instead of chasing a pointer per victim
// (an allocation takes dozens of blocks at once).
#include <cstdint>
#include <vector>

#include "base/params.hpp"
#include "sim/cache/eviction/eviction_order.hpp"

namespace kvsim {

class LruOrder final : public EvictionOrder {
 public:
  std::string_view name() const override { return "lru"; }
  // Appends at the most recent end.
  void on_evictable(EvictableId id) override;
  void on_evictable_range(EvictableId first, int64_t count) override;
  void on_pinned(EvictableId id) override;
  // An evictable entry moves to the most recent end; others are untouched.
  void on_access(EvictableId id) override;
  // The least recent end.
  EvictableId pop_victim() override;
  void pop_victims(int64_t count, std::vector<EvictableId>& out) override;
  EvictableId next_victim() const override;
  // The entry `ahead` places past the oldest end, gone or not: a hint.
  EvictableId victim_ahead(int64_t ahead) const override;
  // The queue from its oldest end, gone entries included: a hint.
  std::span<const EvictableId> victims_ahead() const override {
    if (live_ == 0) return {};
    return {queue_.data() + head_, queue_.size() - head_};
  }
  void prefetch(EvictableId id) const override {
    if (static_cast<size_t>(id) < position_.size())
      __builtin_prefetch(&position_[static_cast<size_t>(id)]);
  }
  std::vector<EvictableId> victims_in_order() const override;
  void reserve(int64_t ids) override;

 private:
  // Positions are 32-bit: compaction keeps the queue under twice the live
  // entries plus a margin, and ids are below 2^31.
  static constexpr int32_t kNotQueued = -1;
  bool queued(EvictableId id) const {
    const auto i = static_cast<size_t>(id);
    return i < position_.size() && position_[i] != kNotQueued;
  }
  // Past entries at the oldest end that are gone.
  void skip_gone() const;
  void push_back(EvictableId id);
  // Drops the gone entries, keeping the live ones in order.
  void compact();

  std::vector<EvictableId> queue_;  // [head_, size): oldest first, gone ones included
  mutable size_t head_ = 0;
  std::vector<int32_t> position_;  // by id: index of its live entry in queue_, or kNotQueued
  size_t live_ = 0;
};

config::ComponentInfo lru_order_info();

}  // namespace kvsim
