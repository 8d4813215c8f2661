#pragma once
// An eviction order: which evictable entry of a pool goes next. The pool
// owns its order (DESIGN "an eviction order owned by the pool", as gem5's
// caches own a replacement policy) and keeps the entries themselves (blocks,
// chunks, their content and counts); the order sees only entry ids and keeps
// whatever ranking it needs.
//
// What the pool reports, for entry ids in [0, 2^31):
// - on_evictable(id): the entry may now be evicted (a block freed to
//   reference count 0, a chunk inserted or unpinned). It was not evictable.
// - on_pinned(id): an evictable entry leaves the evictable set without being
//   evicted (a prefix hit revives a freed cached block).
// - on_access(id): the entry was used (a prefix hit on a block, a chunk hit).
//   It stays in or out of the evictable set as it was; a block revived by a
//   hit gets on_pinned first, then on_access.
// - pop_victim(): removes and returns the evictable entry to evict (or, for
//   a block pool, to reuse) next. The pool calls it only when it knows some
//   entry is evictable. The id's content is gone: what the order learns of
//   it next is new content.
// - on_content(id, key): the entry now holds the content named by `key` (a
//   block registered its hash, a chunk was inserted). Orders that remember
//   evicted content (s3fifo's ghost queue, arc's B1 and B2) recognise a
//   returning key here; the others ignore it. An entry may never get a key
//   (a block that is never filled).
//
// A pool makes one call per allocation, free or hit, so every call must cost
// O(1) (amortised): the order sits on the hot path of every engine step.
// Between calls the evictable set an order holds is exactly the pool's.
#include <cstdint>
#include <memory>
#include <span>
#include <string_view>
#include <vector>

namespace kvsim {

using EvictableId = int32_t;
constexpr EvictableId kNoEvictable = -1;

class EvictionOrder {
 public:
  virtual ~EvictionOrder() = default;

  // The registered name ("lru"), or a test's own.
  virtual std::string_view name() const = 0;
  virtual void on_evictable(EvictableId id) = 0;
  virtual void on_pinned(EvictableId id) = 0;
  virtual void on_access(EvictableId id) = 0;
  virtual EvictableId pop_victim() = 0;
  // Appends `count` victims to `out`: what `count` pop_victim() calls would
  // return, in order (an order may take them in one go). The pool calls it
  // only when at least `count` entries are evictable.
  virtual void pop_victims(int64_t count, std::vector<EvictableId>& out) {
    for (int64_t i = 0; i < count; ++i) out.push_back(pop_victim());
  }
  // The entry pop_victim() would return now, when the order can tell at no
  // cost (a prefetch hint for the pool); kNoEvictable otherwise.
  virtual EvictableId next_victim() const { return kNoEvictable; }
  // The entry likely to be the victim `ahead` pops from now (0: the next),
  // when the order can tell at no cost; kNoEvictable otherwise. A hint for
  // the pool's prefetches only: it may name an entry that will not be a
  // victim by then, and nothing may depend on it.
  virtual EvictableId victim_ahead(int64_t ahead) const {
    return ahead == 0 ? next_victim() : kNoEvictable;
  }
  // The entries likely to be the next victims, next first, when the order
  // keeps them in one array it can lend at no cost (victim_ahead(k) for
  // every k in one call); empty otherwise. A hint for the pool's
  // prefetches only, valid until the order's next change: it may name
  // entries that are no longer evictable, or hold kNoEvictable for them.
  virtual std::span<const EvictableId> victims_ahead() const { return {}; }
  // Starts loading what the order keeps for `id` (a hint: nothing changes),
  // ahead of a call about it.
  virtual void prefetch(EvictableId id) const { (void)id; }
  // prefetch() of every entry of `ids` (kNoEvictable ones skipped), in one
  // call (a window of a finished sequence's blocks).
  virtual void prefetch_each(std::span<const EvictableId> ids) const {
    for (const EvictableId id : ids)
      if (id != kNoEvictable) prefetch(id);
  }
  // on_evictable(first), on_evictable(first + 1), ... `count` calls in one
  // (a fresh pool frees all its blocks in id order).
  virtual void on_evictable_range(EvictableId first, int64_t count) {
    for (int64_t i = 0; i < count; ++i) on_evictable(static_cast<EvictableId>(first + i));
  }
  // on_evictable(ids[0]), on_evictable(ids[1]), ... in one call (a
  // finished sequence's blocks freed a window at a time). Precondition: no
  // id is evictable already (the pool calls it only for blocks whose count
  // it just took to zero), which an order may rely on instead of checking.
  virtual void on_evictable_each(std::span<const EvictableId> ids) {
    for (const EvictableId id : ids) on_evictable(id);
  }
  // Entry ids will lie in [0, ids): an order may allocate for them at once
  // (a hint: nothing observable changes; the default does nothing).
  virtual void reserve(int64_t ids) { (void)ids; }
  virtual void on_content(EvictableId id, uint64_t key) {
    (void)id;
    (void)key;
  }
  // Whether on_content() can change what the order does: false for an
  // order that ignores it, whose pool may then defer computing a content's
  // key (sim/cache/pending_hashes.hpp).
  virtual bool uses_content() const { return true; }
  // Every evictable entry, next victim first (tests, invariant checks, and
  // a pool that drops everything in victim order). O(n).
  virtual std::vector<EvictableId> victims_in_order() const = 0;
  // By id in [0, ids): 1 when the entry is evictable, else 0 (a pool's invariant
  // check, in one pass by id where an order can). Throws std::logic_error
  // when the order holds an id outside [0, ids) or holds one twice. The
  // default reads victims_in_order(). O(n).
  virtual std::vector<uint8_t> evictable_flags(int64_t ids) const;
};

}  // namespace kvsim
