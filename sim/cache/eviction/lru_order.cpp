#include "sim/cache/eviction/lru_order.hpp"

#include <fmt/format.h>

#include <algorithm>
#include <stdexcept>

namespace kvsim {

LruOrder::Link& LruOrder::link(EvictableId id) {
  if (id < 0) throw std::logic_error(fmt::format("lru order: entry id {}", id));
  const auto i = static_cast<size_t>(id);
  if (i >= links_.size()) links_.resize(std::max(i + 1, 2 * links_.size()));
  return links_[i];
}

void LruOrder::unlink(EvictableId id) {
  Link& l = links_[static_cast<size_t>(id)];
  if (l.prev != kNoEvictable)
    links_[static_cast<size_t>(l.prev)].next = l.next;
  else
    head_ = l.next;
  if (l.next != kNoEvictable)
    links_[static_cast<size_t>(l.next)].prev = l.prev;
  else
    tail_ = l.prev;
  l.prev = l.next = kNoEvictable;
  l.linked = false;
}

void LruOrder::push_back(EvictableId id) {
  Link& l = links_[static_cast<size_t>(id)];
  l.prev = tail_;
  l.next = kNoEvictable;
  if (tail_ != kNoEvictable)
    links_[static_cast<size_t>(tail_)].next = id;
  else
    head_ = id;
  tail_ = id;
  l.linked = true;
}

void LruOrder::on_evictable(EvictableId id) {
  if (link(id).linked)
    throw std::logic_error(fmt::format("lru order: entry {} is already evictable", id));
  push_back(id);
}

void LruOrder::on_pinned(EvictableId id) {
  if (!link(id).linked)
    throw std::logic_error(fmt::format("lru order: entry {} is not evictable", id));
  unlink(id);
}

void LruOrder::on_access(EvictableId id) {
  if (!link(id).linked || id == tail_) return;
  unlink(id);
  push_back(id);
}

EvictableId LruOrder::pop_victim() {
  const EvictableId id = head_;
  if (id == kNoEvictable) throw std::logic_error("lru order: no evictable entry");
  unlink(id);
  return id;
}

std::vector<EvictableId> LruOrder::victims_in_order() const {
  std::vector<EvictableId> out;
  for (EvictableId id = head_; id != kNoEvictable; id = links_[static_cast<size_t>(id)].next)
    out.push_back(id);
  return out;
}

config::ComponentInfo lru_order_info() {
  return {"eviction order",
          "lru",
          "least recently freed or used first (vLLM's free queue, seed 003's chunk LRU)",
          {}};
}

}  // namespace kvsim
