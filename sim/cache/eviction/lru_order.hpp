#pragma once
// `lru`: the least recently freed or used entry goes first. For a block pool
// this is vLLM's prefix-cache free queue (seeds 000 and 001): a freed block
// goes to the tail, allocation takes the head, so blocks never cached and
// cached-but-free blocks are reused in the order they were freed, and a fresh
// pool hands out blocks in id order. For the chunk pool it is seed 003's
// ChunkHashIndex LRU: an inserted or hit chunk goes to the most recent end.
//
// A queue in a ring, oldest first, in which an entry that leaves the
// evictable set or moves to the recent end is only marked gone (its place
// reads kNoEvictable) and skipped when the oldest end reaches it: taking a
// victim reads the ring in order, and no id's position. Victims leave at the oldest end and free
// their places for the recent end, so a pool that never revives a block (no prefix hit) never moves
// an entry; when the ring is full of live and gone entries, the gone ones are dropped in place if
// they are at least half, else the ring doubles, so every call is O(1) amortised. Unlike a linked
// list, taking many victims in a row reads the array in order instead of chasing a pointer per
// victim (an allocation takes dozens of blocks at once).
#include <algorithm>
#include <cstdint>
#include <memory>
#include <new>
#include <utility>
#include <vector>

#include "base/params.hpp"
#include "sim/cache/eviction/eviction_order.hpp"
#include "sim/cache/trivial_array.hpp"

namespace kvsim {

class LruOrder final : public EvictionOrder {
 public:
  std::string_view name() const override { return "lru"; }
  // Appends at the most recent end.
  void on_evictable(EvictableId id) override;
  void on_evictable_range(EvictableId first, int64_t count) override;
  // The calls one by one, without a call each. The pool calls it only for
  // blocks whose last reference it just dropped, which cannot be queued (a
  // block leaves the order when it is taken or revived, before it can be
  // referenced): their places are written without first being read, so a
  // freed block's position costs no load miss. check_invariants() still
  // compares the order with the counts. An id without a place yet takes
  // on_evictable()'s checks.
  void on_evictable_each(std::span<const EvictableId> ids) override {
    for (const EvictableId id : ids) on_freed(id);
  }
  void on_pinned(EvictableId id) override;
  // An evictable entry moves to the most recent end; others are untouched.
  void on_access(EvictableId id) override;
  // The least recent end.
  EvictableId pop_victim() override;
  // pop_victim() for a caller that knows an entry is evictable, without the
  // virtual call or the check: a block pool's one-block allocation (a
  // decode crossing into a new block, dozens a step). The same entry and
  // the same hints.
  EvictableId pop_oldest() {
    while (ring_[place(head_)] == kNoEvictable) ++head_;  // skip_gone()
    if (head_ + kPositionAhead < tail_) LruOrder::prefetch(ring_[place(head_ + kPositionAhead)]);
    __builtin_prefetch(&ring_[place(head_ + kRingAhead)]);
    const EvictableId id = ring_[place(head_++)];
    position_[static_cast<size_t>(id)] = kNotQueued;
    --live_;
    return id;
  }
  // victim_ahead(ahead) for ahead >= 0, inline: a hint that reads one place
  // (across the ring's wrap, unlike victims_ahead()).
  EvictableId entry_ahead(uint64_t ahead) const {
    const uint64_t n = head_ + ahead;
    return n < tail_ ? ring_[place(n)] : kNoEvictable;
  }
  // on_evictable_each() of one freed block, inline (same precondition).
  void on_freed(EvictableId id) {
    if (static_cast<size_t>(id) < position_.size())
      push_back(id);
    else
      LruOrder::on_evictable(id);
  }
  // on_evictable_each() one id at a time for up to `count` ids, each
  // evictable before (a pool's blocks all are, from its construction), for
  // a pool releasing a
  // finished sequence's blocks: room for them all is made at once, and the
  // ring's newest end is kept in the appender (registers) until it goes,
  // where push_back() checked for room and stored it back at every id.
  // No other call on the order while it lives.
  class FreedAppender {
   public:
    FreedAppender(LruOrder& order, size_t count) : order_(order) {
      order.make_room(count);
      ring_ = order.ring_.data();
      positions_ = order.position_.data();
      mask_ = order.mask_;
      tail_ = order.tail_;
    }
    FreedAppender(const FreedAppender&) = delete;
    FreedAppender& operator=(const FreedAppender&) = delete;
    ~FreedAppender() {
      order_.live_ += static_cast<size_t>(tail_ - order_.tail_);
      order_.tail_ = tail_;
    }
    void push(EvictableId id) {
      const size_t at = static_cast<size_t>(tail_++) & mask_;
      positions_[static_cast<size_t>(id)] = static_cast<int32_t>(at);
      ring_[at] = id;
    }
    // Starts loading, for writing, the place push(id) writes (a hint).
    // Without LruOrder::prefetch's check: every id given has a place.
    void prefetch(EvictableId id) const {
      __builtin_prefetch(&positions_[static_cast<size_t>(id)], 1);
    }
    // Ids pushed so far.
    size_t pushed() const { return static_cast<size_t>(tail_ - order_.tail_); }

   private:
    LruOrder& order_;
    EvictableId* ring_;
    int32_t* positions_;
    size_t mask_;
    uint64_t tail_;
  };
  void pop_victims(int64_t count, std::vector<EvictableId>& out) override;
  EvictableId next_victim() const override;
  // The entry `ahead` places past the oldest end, kNoEvictable if it is
  // gone: a hint.
  EvictableId victim_ahead(int64_t ahead) const override;
  // The ring from its oldest end to the end of the array (where it wraps),
  // gone entries reading kNoEvictable: a hint.
  std::span<const EvictableId> victims_ahead() const override {
    if (live_ == 0) return {};
    const size_t first = place(head_);
    return {ring_.data() + first, std::min<size_t>(ring_.size() - first, tail_ - head_)};
  }
  void prefetch(EvictableId id) const override {
    if (static_cast<size_t>(id) < position_.size())
      __builtin_prefetch(&position_[static_cast<size_t>(id)]);
  }
  void prefetch_each(std::span<const EvictableId> ids) const override {
    for (const EvictableId id : ids) LruOrder::prefetch(id);  // a negative id is skipped
  }
  std::vector<EvictableId> victims_in_order() const override;
  // Recency only: on_content is the base's no-op.
  bool uses_content() const override { return false; }
  // One pass over the positions by id (no walk of the ring).
  std::vector<uint8_t> evictable_flags(int64_t ids) const override;
  // evictable_flags(ids) without the flags: visit(id, listed) for every id
  // below `ids` in order (listed 0 or 1), then the same checks, which throw
  // as evictable_flags() does. For a pool's drain check, which reads its
  // own state of each block beside it in the same pass (inline, so that
  // the loop vectorises): the flags were 10^5 bytes written, then read
  // again, at the end of every run.
  template <class Visit>
  void visit_evictable(int64_t ids, Visit&& visit) const {
    const auto n = static_cast<size_t>(std::max<int64_t>(ids, 0));
    const auto ring_size = static_cast<uint32_t>(ring_.size());
    const auto oldest = static_cast<uint32_t>(place(head_));
    const auto span = static_cast<uint32_t>(tail_ - head_);
    const auto mask = static_cast<uint32_t>(mask_);
    const size_t checked = std::min(n, position_.size());
    const int32_t* positions = position_.data();
    uint32_t count = 0;
    uint32_t out_of_ring = 0;
    // Without a branch per id: the count and every check folded into one
    // bit. A fault is then looked for again, slowly, to name the entry.
    for (size_t id = 0; id < checked; ++id) {
      const auto at = static_cast<uint32_t>(positions[id]);
      const auto queued = static_cast<uint32_t>(at != static_cast<uint32_t>(kNotQueued));
      visit(id, queued);
      count += queued;
      // A live entry's place lies between the oldest and the newest entry.
      out_of_ring |= queued & (static_cast<uint32_t>(at >= ring_size) |
                               static_cast<uint32_t>(((at - oldest) & mask) >= span));
    }
    for (size_t id = checked; id < n; ++id) visit(id, uint32_t{0});
    check_places(ids, checked, count, out_of_ring != 0);
  }
  void reserve(int64_t ids) override;

 private:
  // Places in the ring are 32-bit: the ring stays under 2^31 entries (ids
  // are below 2^31, and it holds at most twice the live ones plus a margin).
  static constexpr int32_t kNotQueued = -1;
  // Victims a pop looks ahead to load their positions (the ring itself is
  // read in order).
  static constexpr uint64_t kPositionAhead = 8;
  // Places a pop looks ahead in the ring itself: read in order but slowly (a
  // decode step takes a block every few hundred nanoseconds), so no hardware
  // prefetcher follows it, and a pool reads 16 places ahead (victims_ahead).
  static constexpr uint64_t kRingAhead = 48;
  bool queued(EvictableId id) const {
    const auto i = static_cast<size_t>(id);
    return i < position_.size() && position_[i] != kNotQueued;
  }
  size_t place(uint64_t n) const { return static_cast<size_t>(n) & mask_; }
  // Whether the n-th entry pushed (head_ <= n < tail_) is live.
  bool is_live(uint64_t n) const { return ring_[place(n)] != kNoEvictable; }
  // Marks the entry of a queued id gone.
  void unqueue(EvictableId id);
  // Past entries at the oldest end that are gone.
  void skip_gone() const;
  void push_back(EvictableId id) {
    if (tail_ - head_ == ring_.size()) compact();
    position_[static_cast<size_t>(id)] = static_cast<int32_t>(place(tail_));
    ring_[place(tail_)] = id;
    ++tail_;
    ++live_;
  }
  // A full ring: drops the gone entries in place, or moves the live ones, in
  // order, to a ring of `capacity` places (a power of two).
  void compact();
  // Room for `count` more entries: compact() ahead of time (FreedAppender).
  void make_room(size_t count) {
    if (ring_.size() - (tail_ - head_) < count) make_room_slowly(count);
  }
  void make_room_slowly(size_t count);
  // visit_evictable()'s checks once its pass over the first `checked` ids
  // counted `count` queued and found `out_of_ring`: throws on a fault.
  void check_places(int64_t ids, size_t checked, uint32_t count, bool out_of_ring) const;
  void regrow(size_t capacity);

  // A power of two places; entry n at place(n), gone: kNoEvictable. Only
  // the places of [head_, tail_) are ever read: a new ring is not cleared.
  TrivialArray<EvictableId> ring_;
  size_t mask_ = 0;            // ring_.size() - 1 (0 while it is empty)
  mutable uint64_t head_ = 0;  // entries pushed and left at the oldest end
  uint64_t tail_ = 0;          // entries pushed: [head_, tail_) in the ring, gone ones included
  // By id: place of its live entry, or kNotQueued. Grown without writing
  // (UnwrittenInts) where on_evictable_range() writes every new place
  // itself: a fresh pool's 10^5 positions were filled, then written again.
  template <class T>
  struct UnwrittenInts : std::allocator<T> {
    template <class U>
    struct rebind {
      using other = UnwrittenInts<U>;
    };
    UnwrittenInts() = default;
    template <class U>
    UnwrittenInts(const UnwrittenInts<U>&) {}
    void construct(T* p) { ::new (static_cast<void*>(p)) T; }
    template <class... Args>
    void construct(T* p, Args&&... args) {
      ::new (static_cast<void*>(p)) T(std::forward<Args>(args)...);
    }
  };
  std::vector<int32_t, UnwrittenInts<int32_t>> position_;
  size_t live_ = 0;
};

config::ComponentInfo lru_order_info();

}  // namespace kvsim
