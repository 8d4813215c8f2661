#pragma once
// `lru`: the least recently freed or used entry goes first. For a block pool
// this is vLLM's prefix-cache free queue (seeds 000 and 001): a freed block
// goes to the tail, allocation takes the head, so blocks never cached and
// cached-but-free blocks are reused in the order they were freed, and a fresh
// pool hands out blocks in id order. For the chunk pool it is seed 003's
// ChunkHashIndex LRU: an inserted or hit chunk goes to the most recent end.
//
// An intrusive doubly linked list over a vector indexed by entry id: every
// call is O(1), growth of the vector aside.
#include <vector>

#include "base/params.hpp"
#include "sim/cache/eviction/eviction_order.hpp"

namespace kvsim {

class LruOrder final : public EvictionOrder {
 public:
  std::string_view name() const override { return "lru"; }
  // Appends at the most recent end.
  void on_evictable(EvictableId id) override;
  void on_pinned(EvictableId id) override;
  // An evictable entry moves to the most recent end; others are untouched.
  void on_access(EvictableId id) override;
  // The least recent end.
  EvictableId pop_victim() override;
  EvictableId next_victim() const override { return head_; }
  std::vector<EvictableId> victims_in_order() const override;

 private:
  struct Link {
    EvictableId prev = kNoEvictable;
    EvictableId next = kNoEvictable;
    bool linked = false;
  };
  Link& link(EvictableId id);
  void unlink(EvictableId id);
  void push_back(EvictableId id);

  std::vector<Link> links_;
  EvictableId head_ = kNoEvictable;  // least recent
  EvictableId tail_ = kNoEvictable;  // most recent
};

config::ComponentInfo lru_order_info();

}  // namespace kvsim
