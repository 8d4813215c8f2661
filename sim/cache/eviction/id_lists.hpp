#pragma once
// Several intrusive doubly linked lists over one vector indexed by entry id:
// an id is in at most one list at a time, and every operation is O(1)
// (growth of the vector aside). The building block of the orders that keep
// more than one queue (lfu's frequency buckets, s3fifo's small and main
// FIFOs, arc's T1 and T2). Front = oldest, back = newest.
#include <algorithm>
#include <cstdint>
#include <stdexcept>
#include <vector>

#include "sim/cache/eviction/eviction_order.hpp"

namespace kvsim {

class IdLists {
 public:
  explicit IdLists(int num_lists) : lists_(static_cast<size_t>(num_lists)) {}

  // -1 when the id is in no list.
  int list_of(EvictableId id) const {
    const auto i = static_cast<size_t>(id);
    return i < links_.size() ? links_[i].list : -1;
  }
  int64_t size(int list) const { return lists_[static_cast<size_t>(list)].size; }
  bool empty(int list) const { return size(list) == 0; }
  EvictableId front(int list) const { return lists_[static_cast<size_t>(list)].head; }
  EvictableId next(EvictableId id) const { return links_[static_cast<size_t>(id)].next; }

  void push_back(int list, EvictableId id) {
    if (id < 0) throw std::logic_error("id lists: negative entry id");
    const auto i = static_cast<size_t>(id);
    if (i >= links_.size()) links_.resize(std::max(i + 1, 2 * links_.size()));
    Link& l = links_[i];
    if (l.list >= 0) throw std::logic_error("id lists: entry already in a list");
    Head& h = lists_[static_cast<size_t>(list)];
    l = {h.tail, kNoEvictable, list};
    if (h.tail != kNoEvictable)
      links_[static_cast<size_t>(h.tail)].next = id;
    else
      h.head = id;
    h.tail = id;
    ++h.size;
  }

  void remove(EvictableId id) {
    Link& l = links_.at(static_cast<size_t>(id));
    if (l.list < 0) throw std::logic_error("id lists: entry in no list");
    Head& h = lists_[static_cast<size_t>(l.list)];
    if (l.prev != kNoEvictable)
      links_[static_cast<size_t>(l.prev)].next = l.next;
    else
      h.head = l.next;
    if (l.next != kNoEvictable)
      links_[static_cast<size_t>(l.next)].prev = l.prev;
    else
      h.tail = l.prev;
    --h.size;
    l = {};
  }

  EvictableId pop_front(int list) {
    const EvictableId id = front(list);
    if (id == kNoEvictable) throw std::logic_error("id lists: pop from an empty list");
    remove(id);
    return id;
  }

  // Appends the list's ids, oldest first.
  void append_to(int list, std::vector<EvictableId>& out) const {
    for (EvictableId id = front(list); id != kNoEvictable; id = next(id)) out.push_back(id);
  }

 private:
  struct Link {
    EvictableId prev = kNoEvictable;
    EvictableId next = kNoEvictable;
    int list = -1;
  };
  struct Head {
    EvictableId head = kNoEvictable;
    EvictableId tail = kNoEvictable;
    int64_t size = 0;
  };
  std::vector<Link> links_;
  std::vector<Head> lists_;
};

}  // namespace kvsim
