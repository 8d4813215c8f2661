#include "sim/cache/eviction/lru_order.hpp"

#include <fmt/format.h>

#include <algorithm>
#include <limits>
#include <stdexcept>

namespace kvsim {

namespace {
// Past the largest position a 32-bit entry holds, the queue is compacted.
constexpr size_t kMaxQueue = std::numeric_limits<int32_t>::max();
// Victims a pop looks ahead to load their positions (the queue itself is
// read in order).
constexpr size_t kPositionAhead = 8;
}  // namespace

void LruOrder::skip_gone() const {
  while (head_ < queue_.size() &&
         position_[static_cast<size_t>(queue_[head_])] != static_cast<int32_t>(head_))
    ++head_;
}

void LruOrder::push_back(EvictableId id) {
  if (queue_.size() >= 2 * live_ + 64 || queue_.size() >= kMaxQueue) compact();
  position_[static_cast<size_t>(id)] = static_cast<int32_t>(queue_.size());
  queue_.push_back(id);
  ++live_;
}

void LruOrder::compact() {
  size_t kept = 0;
  for (size_t i = head_; i < queue_.size(); ++i) {
    const EvictableId id = queue_[i];
    if (position_[static_cast<size_t>(id)] != static_cast<int32_t>(i)) continue;
    position_[static_cast<size_t>(id)] = static_cast<int32_t>(kept);
    queue_[kept++] = id;
  }
  queue_.resize(kept);
  head_ = 0;
}

void LruOrder::on_evictable(EvictableId id) {
  if (id < 0) throw std::logic_error(fmt::format("lru order: entry id {}", id));
  if (queued(id))
    throw std::logic_error(fmt::format("lru order: entry {} is already evictable", id));
  const auto i = static_cast<size_t>(id);
  if (i >= position_.size()) position_.resize(std::max(i + 1, 2 * position_.size()), kNotQueued);
  push_back(id);
}

void LruOrder::on_evictable_range(EvictableId first, int64_t count) {
  if (count <= 0) return;
  if (!queue_.empty()) {  // entries queued already: the checks of one by one
    EvictionOrder::on_evictable_range(first, count);
    return;
  }
  if (first < 0 ||
      static_cast<int64_t>(first) + count - 1 > std::numeric_limits<EvictableId>::max())
    throw std::logic_error(fmt::format("lru order: entry ids {} + {}", first, count));
  // An empty queue: the entries in order, written in one pass.
  const auto end = static_cast<size_t>(first) + static_cast<size_t>(count);
  if (end > position_.size()) position_.resize(end, kNotQueued);
  head_ = 0;
  queue_.resize(static_cast<size_t>(count));
  for (size_t i = 0; i < queue_.size(); ++i) {
    queue_[i] = static_cast<EvictableId>(static_cast<size_t>(first) + i);
    position_[static_cast<size_t>(first) + i] = static_cast<int32_t>(i);
  }
  live_ = static_cast<size_t>(count);
}

void LruOrder::on_pinned(EvictableId id) {
  if (id < 0 || !queued(id))
    throw std::logic_error(fmt::format("lru order: entry {} is not evictable", id));
  position_[static_cast<size_t>(id)] = kNotQueued;
  --live_;
}

void LruOrder::on_access(EvictableId id) {
  if (id < 0) throw std::logic_error(fmt::format("lru order: entry id {}", id));
  if (!queued(id)) return;
  // Already the newest entry: moving it would change nothing.
  if (static_cast<size_t>(position_[static_cast<size_t>(id)]) + 1 == queue_.size()) return;
  position_[static_cast<size_t>(id)] = kNotQueued;
  --live_;
  push_back(id);
}

EvictableId LruOrder::pop_victim() {
  if (live_ == 0) throw std::logic_error("lru order: no evictable entry");
  skip_gone();
  if (head_ + kPositionAhead < queue_.size()) prefetch(queue_[head_ + kPositionAhead]);
  const EvictableId id = queue_[head_++];
  position_[static_cast<size_t>(id)] = kNotQueued;
  --live_;
  return id;
}

void LruOrder::pop_victims(int64_t count, std::vector<EvictableId>& out) {
  if (count <= 0) return;
  if (static_cast<size_t>(count) > live_)
    throw std::logic_error(fmt::format("lru order: {} victims asked, {} evictable", count, live_));
  // Room for the victims at once, but growing geometrically: `out` is
  // often a block table taking one block at a time, and an exact reserve
  // would reallocate it on every call.
  const size_t needed = out.size() + static_cast<size_t>(count);
  if (needed > out.capacity()) out.reserve(std::max(needed, 2 * out.capacity()));
  for (int64_t i = 0; i < count; ++i) {
    skip_gone();
    if (head_ + kPositionAhead < queue_.size()) prefetch(queue_[head_ + kPositionAhead]);
    const EvictableId id = queue_[head_++];
    position_[static_cast<size_t>(id)] = kNotQueued;
    out.push_back(id);
  }
  live_ -= static_cast<size_t>(count);
}

void LruOrder::reserve(int64_t ids) {
  // A pool frees every block once at construction: one allocation each
  // instead of a doubling chain.
  const auto n = static_cast<size_t>(std::max<int64_t>(ids, 0));
  if (n > position_.size()) position_.resize(n, kNotQueued);
  queue_.reserve(n);
}

EvictableId LruOrder::next_victim() const {
  if (live_ == 0) return kNoEvictable;
  skip_gone();
  return queue_[head_];
}

EvictableId LruOrder::victim_ahead(int64_t ahead) const {
  if (ahead < 0 || live_ == 0) return kNoEvictable;
  const size_t i = head_ + static_cast<size_t>(ahead);
  return i < queue_.size() ? queue_[i] : kNoEvictable;
}

std::vector<EvictableId> LruOrder::victims_in_order() const {
  std::vector<EvictableId> out;
  out.reserve(live_);
  for (size_t i = head_; i < queue_.size(); ++i) {
    const EvictableId id = queue_[i];
    if (position_[static_cast<size_t>(id)] == static_cast<int32_t>(i)) out.push_back(id);
  }
  return out;
}

config::ComponentInfo lru_order_info() {
  return {"eviction order",
          "lru",
          "least recently freed or used first (vLLM's free queue, seed 003's chunk LRU)",
          {}};
}

}  // namespace kvsim
