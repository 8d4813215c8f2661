#include "sim/cache/eviction/lru_order.hpp"

#include <fmt/format.h>

#include <algorithm>
#include <limits>
#include <stdexcept>

namespace kvsim {

namespace {
// The largest ring: places must fit a 32-bit position.
constexpr size_t kMaxRing = size_t{1} << 30;

// A power of two of at least `places`.
size_t ring_of(size_t places) {
  size_t capacity = 64;
  while (capacity < places) capacity *= 2;
  if (capacity > kMaxRing) throw std::logic_error("lru order: more entries than a ring holds");
  return capacity;
}
}  // namespace

void LruOrder::skip_gone() const {
  while (head_ < tail_ && !is_live(head_)) ++head_;
}

void LruOrder::compact() {
  // Gone entries are at least half of a full ring: dropped in place, the
  // live ones keeping their order from the oldest end (an entry moves only
  // towards it, to a place read already).
  if (ring_.size() != 0 && 2 * live_ + 64 <= ring_.size()) {
    uint64_t kept = head_;
    for (uint64_t n = head_; n < tail_; ++n) {
      if (!is_live(n)) continue;
      const EvictableId id = ring_[place(n)];
      if (kept != n) position_[static_cast<size_t>(id)] = static_cast<int32_t>(place(kept));
      ring_[place(kept++)] = id;
    }
    tail_ = kept;
    return;
  }
  // Places for the live entries and as many again gone or new before the
  // ring is full.
  regrow(ring_of(2 * live_ + 66));
}

void LruOrder::make_room_slowly(size_t count) {
  compact();  // gone entries dropped, or the ring doubled
  if (ring_.size() - (tail_ - head_) < count) regrow(ring_of(2 * live_ + count + 66));
}

void LruOrder::regrow(size_t capacity) {
  auto ring = TrivialArray<EvictableId>::unwritten(capacity);
  size_t kept = 0;
  for (uint64_t n = head_; n < tail_; ++n) {
    if (!is_live(n)) continue;
    const EvictableId id = ring_[place(n)];
    position_[static_cast<size_t>(id)] = static_cast<int32_t>(kept);
    ring[kept++] = id;
  }
  ring_ = std::move(ring);
  mask_ = capacity - 1;
  head_ = 0;
  tail_ = kept;
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
  if (live_ != 0) {  // entries queued already: the checks of one by one
    EvictionOrder::on_evictable_range(first, count);
    return;
  }
  if (first < 0 ||
      static_cast<int64_t>(first) + count - 1 > std::numeric_limits<EvictableId>::max())
    throw std::logic_error(fmt::format("lru order: entry ids {} + {}", first, count));
  // No live entry (so no position is set): the entries in order from the
  // ring's first place, written in one pass.
  const auto end = static_cast<size_t>(first) + static_cast<size_t>(count);
  if (end > position_.size()) {
    // New ids get their places below, each written once: only the ids
    // between the old end and `first` are cleared.
    const size_t old_end = position_.size();
    position_.resize(end);
    std::fill(
        position_.begin() + static_cast<std::ptrdiff_t>(old_end),
        position_.begin() + std::max<std::ptrdiff_t>(first, static_cast<std::ptrdiff_t>(old_end)),
        kNotQueued);
  }
  const auto n = static_cast<size_t>(count);
  if (ring_.size() < n) {
    ring_ = TrivialArray<EvictableId>::unwritten(ring_of(n + 64));
    mask_ = ring_.size() - 1;
  }
  for (size_t i = 0; i < n; ++i) {
    ring_[i] = static_cast<EvictableId>(static_cast<size_t>(first) + i);
    position_[static_cast<size_t>(first) + i] = static_cast<int32_t>(i);
  }
  head_ = 0;
  tail_ = n;
  live_ = n;
}

void LruOrder::unqueue(EvictableId id) {
  int32_t& at = position_[static_cast<size_t>(id)];
  ring_[static_cast<size_t>(at)] = kNoEvictable;
  at = kNotQueued;
  --live_;
}

void LruOrder::on_pinned(EvictableId id) {
  if (id < 0 || !queued(id))
    throw std::logic_error(fmt::format("lru order: entry {} is not evictable", id));
  unqueue(id);
}

void LruOrder::on_access(EvictableId id) {
  if (id < 0) throw std::logic_error(fmt::format("lru order: entry id {}", id));
  if (!queued(id)) return;
  // Already the newest entry: moving it would change nothing.
  if (position_[static_cast<size_t>(id)] == static_cast<int32_t>(place(tail_ - 1))) return;
  unqueue(id);
  push_back(id);
}

EvictableId LruOrder::pop_victim() {
  if (live_ == 0) throw std::logic_error("lru order: no evictable entry");
  return pop_oldest();
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
    if (head_ + kPositionAhead < tail_) prefetch(ring_[place(head_ + kPositionAhead)]);
    const EvictableId id = ring_[place(head_++)];
    position_[static_cast<size_t>(id)] = kNotQueued;
    out.push_back(id);
  }
  live_ -= static_cast<size_t>(count);
}

void LruOrder::reserve(int64_t ids) {
  // A pool frees every block once at construction: one allocation each
  // instead of a doubling chain.
  const auto n = static_cast<size_t>(std::max<int64_t>(ids, 0));
  // Room only: the ids' places are written when they first become
  // evictable (on_evictable_range writes a fresh pool's in one pass).
  position_.reserve(n);
  // Room for every id: a pool with no revived block never fills it.
  if (ring_of(n + 64) > ring_.size()) regrow(ring_of(n + 64));
}

EvictableId LruOrder::next_victim() const {
  if (live_ == 0) return kNoEvictable;
  skip_gone();
  return ring_[place(head_)];
}

EvictableId LruOrder::victim_ahead(int64_t ahead) const {
  if (ahead < 0 || live_ == 0) return kNoEvictable;
  const uint64_t n = head_ + static_cast<uint64_t>(ahead);
  return n < tail_ ? ring_[place(n)] : kNoEvictable;
}

std::vector<EvictableId> LruOrder::victims_in_order() const {
  std::vector<EvictableId> out;
  out.reserve(live_);
  for (uint64_t n = head_; n < tail_; ++n)
    if (is_live(n)) out.push_back(ring_[place(n)]);
  return out;
}

std::vector<uint8_t> LruOrder::evictable_flags(int64_t ids) const {
  std::vector<uint8_t> flags(static_cast<size_t>(std::max<int64_t>(ids, 0)));
  uint8_t* out = flags.data();
  visit_evictable(ids,
                  [out](size_t id, uint32_t listed) { out[id] = static_cast<uint8_t>(listed); });
  return flags;
}

void LruOrder::check_places(int64_t ids, size_t checked, uint32_t count, bool out_of_ring) const {
  bool beyond = false;  // an id at or past `ids` is queued
  for (size_t id = checked; id < position_.size(); ++id) beyond |= position_[id] != kNotQueued;
  if (out_of_ring || beyond) {
    for (size_t id = 0; id < position_.size(); ++id) {
      const int32_t at = position_[id];
      if (at == kNotQueued) continue;
      if (static_cast<int64_t>(id) >= ids)
        throw std::logic_error(
            fmt::format("the lru order holds entry {}, outside [0, {})", id, ids));
      if (static_cast<size_t>(at) >= ring_.size() ||
          ((static_cast<size_t>(at) - place(head_)) & mask_) >= tail_ - head_)
        throw std::logic_error(
            fmt::format("lru order: entry {} at place {}, out of its ring", id, at));
    }
  }
  if (count != live_)
    throw std::logic_error(fmt::format("lru order: {} entries placed, {} counted", count, live_));
}

config::ComponentInfo lru_order_info() {
  return {"eviction order",
          "lru",
          "least recently freed or used first (vLLM's free queue, seed 003's chunk LRU)",
          {}};
}

}  // namespace kvsim
