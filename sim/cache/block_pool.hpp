#pragma once
// Metadata of a pool of KV blocks: reference counts, content hashes and the
// set of free blocks. Tensor storage lives elsewhere (kernels/); this class
// only says which block holds what (DESIGN practice 9).
//
// Reuse follows vLLM's prefix cache: a block whose last reference goes away
// keeps its hash and becomes free; allocation takes the free block the
// pool's eviction order names (its hash, if any, is evicted), while a later
// request with the same prefix can revive a freed block until then. Every
// free block is in the order, whether it holds a hash or never did: under
// `lru` the order is vLLM's free queue (freed blocks to the tail, allocation
// from the head, a fresh pool in id order).
#include <cstdint>
#include <limits>
#include <memory>
#include <span>
#include <string>
#include <vector>

#include "sim/cache/block_hash.hpp"
#include "sim/cache/block_hash_table.hpp"
#include "sim/cache/eviction/eviction_order.hpp"
#include "sim/cache/eviction/lru_order.hpp"
#include "sim/cache/trivial_array.hpp"

namespace kvsim {

using BlockId = int32_t;
constexpr BlockId kNoBlock = -1;
static_assert(BlockHashTable::kAbsent == kNoBlock, "lookup() returns the table's absent value");

// Told of every cached content a pool drops to reuse its block, so a tier
// below the device (sim/cache/tiers/) can keep it. Called inside allocate().
class BlockEvictionListener {
 public:
  virtual ~BlockEvictionListener() = default;
  virtual void on_block_evicted(const BlockHash& hash) = 0;
};

// Told when a content hash becomes findable in the pool (a block registered
// as the canonical holder of its content) and when it stops being findable
// (that block reused for other content): vLLM's KV events publisher emits
// BlockStored and BlockRemoved at the same two places of its block pool,
// and a router's event-fed prefix index (sim/cluster/event_prefix_index.cpp)
// consumes them. Pending blocks (pending_hashes.hpp) have no hash to tell, so
// a pool with this listener takes none (the paged policy stops deferring).
class KvEventListener {
 public:
  virtual ~KvEventListener() = default;
  virtual void on_block_stored(const BlockHash& hash) = 0;
  virtual void on_block_removed(const BlockHash& hash) = 0;
};

struct BlockPoolParams {
  int64_t num_blocks = 0;
  std::string eviction = "lru";  // a name of eviction_order_names()
  // Content hashes the map has room for from the start (at most one per
  // block; negative: num_blocks). The map grows past them if more are
  // registered, so this changes only its size and when its memory is
  // written, never an answer.
  int64_t expected_hashes = -1;
};

class BlockPool {
 public:
  // The order named by params.eviction.
  explicit BlockPool(const BlockPoolParams& params);
  // An order given directly (params.eviction is not read): a test's own, or
  // a caller composing one.
  BlockPool(const BlockPoolParams& params, std::unique_ptr<EvictionOrder> order);

  int64_t num_blocks() const { return static_cast<int64_t>(state_.size()); }
  int64_t num_free() const { return num_free_; }
  int64_t num_used() const { return num_blocks() - num_free_; }
  // Free blocks that still hold a cached hash (revivable by a prefix hit).
  int64_t num_cached_free() const { return num_cached_free_; }

  // Takes the free block the eviction order picks; its hash, if any, is
  // evicted. Precondition: num_free() > 0.
  BlockId allocate();
  // Appends `count` blocks to `out`: the same blocks, in the same order and
  // with the same effects, as `count` allocate() calls. The victims are
  // named first, so the cache misses on their metadata and on their hashes'
  // places in the map overlap instead of coming one after another (a
  // prompt's admission takes hundreds). Precondition: num_free() >= count.
  // Inline for its commonest call, one block under `lru` (a decode
  // crossing into a new block, dozens a step).
  void allocate_into(int64_t count, std::vector<BlockId>& out) {
    if (count == 1 && lru_ != nullptr && num_free_ > 0)
      allocate_one_lru(out);
    else
      allocate_several(count, out);
  }
  // Adds a reference to a block found by hash (a prefix hit). A free block
  // stops being free.
  void touch(BlockId block);
  // One more reference to a block in use (a store reading it): no access is
  // seen, so a frequency-counting order does not take it for a hit.
  // std::logic_error for a free block.
  void add_reference(BlockId block);
  // Drops one reference; at zero the block is free with its hash kept.
  void release(BlockId block);
  // release() of every entry of `blocks` but kNoBlock, the last first (a
  // finished sequence's table: its tail is reused first). The blocks lie
  // anywhere in the pool: their states and order entries are requested a
  // window at a time, so the cache misses overlap.
  void release_backwards(std::span<const BlockId> blocks);

  // Block holding this content, or kNoBlock.
  BlockId lookup(const BlockHash& hash) const;
  // Starts loading what lookup(hash) and touch(block) or release(block)
  // will read (hints: nothing changes).
  void prefetch_lookup(const BlockHash& hash) const { by_hash_.prefetch(hash); }
  // What mark_pending(block, tag) writes.
  void prefetch_mark(BlockId block) const {
    __builtin_prefetch(&state_[static_cast<size_t>(block)], 1);
    __builtin_prefetch(&hash_[static_cast<size_t>(block)], 1);
  }
  void prefetch_block(BlockId block) const {
    __builtin_prefetch(&state_[static_cast<size_t>(block)]);
    order_->prefetch(block);
  }
  // Records that `block` (in use) now holds content `hash`. When another block
  // already holds that content, the mapping is left alone (both are valid
  // copies; the first stays canonical, as in vLLM).
  void register_hash(BlockId block, const BlockHash& hash);
  // Starts loading what register_hash(block, hash) will touch (a hint:
  // nothing changes).
  void prefetch_register(BlockId block, const BlockHash& hash) const {
    __builtin_prefetch(&state_[static_cast<size_t>(block)]);
    __builtin_prefetch(&hash_[static_cast<size_t>(block)], 1);
    by_hash_.prefetch(hash);
  }

  int32_t ref_count(BlockId block) const {
    return static_cast<int32_t>(state_[static_cast<size_t>(block)].ref_count);
  }
  bool has_hash(BlockId block) const { return state_[static_cast<size_t>(block)].hashed != 0; }

  // Deferred registration (sim/cache/pending_hashes.hpp). mark_pending
  // records that `block` (in use) holds content whose hash is not computed
  // yet: it counts as cached content everywhere a registered block does
  // (has_hash, num_cached_free, evictions) but has no map entry, so lookup()
  // cannot find it. Returns false, changing nothing, when the block already
  // holds content (as register_hash would). Only for a pool whose order
  // ignores content and that has no eviction listener: neither can be told
  // of a content that has no hash yet.
  // `tag` is kept in the block's hash slot, unused until the hash is
  // computed, for the deferral to tell its own blocks from reused ones
  // (pending_tag) without an array of its own.
  // Inline: a decode's every block fill inside a described output calls it.
  bool mark_pending(BlockId block, uint32_t tag = 0) {
    BlockState& st = state_[static_cast<size_t>(block)];
    if (st.hashed) return false;  // content of a full block never changes
    if (listener_ != nullptr || kv_events_ != nullptr || order_uses_content_)
      throw_pending_not_allowed();
    st.hashed = 1;
    st.pending = 1;
    hash_[static_cast<size_t>(block)] = BlockHash{tag, 0};  // no map entry reads it
    return true;
  }
  // mark_pending() for a run of calls, without reading the pool's members
  // again in each (below).
  class PendingMarks;
  PendingMarks pending_marks();
  bool is_pending(BlockId block) const { return state_[static_cast<size_t>(block)].pending != 0; }
  // The tag mark_pending() was given. Precondition: is_pending(block).
  uint32_t pending_tag(BlockId block) const {
    return static_cast<uint32_t>(hash_[static_cast<size_t>(block)].low);
  }
  // Gives a pending block its hash and map entry: the state register_hash
  // would have left. Throws std::logic_error if another block holds `hash`
  // (the deferral was not exact).
  void register_pending(BlockId block, const BlockHash& hash);

  uint64_t evictions() const { return evictions_; }
  const EvictionOrder& eviction_order() const { return *order_; }
  // Null (the default) or a listener that outlives the pool.
  void set_eviction_listener(BlockEvictionListener* listener) { listener_ = listener; }
  // Null (the default: one untaken branch where a hash is registered or
  // erased) or a listener that outlives the pool.
  void set_kv_event_listener(KvEventListener* listener) { kv_events_ = listener; }
  // Free blocks, next to reuse first (tests).
  std::vector<BlockId> free_queue() const;
  // Throws std::logic_error when the order holds a block that is referenced,
  // or the free counts disagree with the blocks' or the order's.
  void check_invariants() const;

 private:
  // A block's metadata lives in two arrays (structure of arrays): the 4-byte
  // state every allocation, hit and release reads, and the 16-byte hash only
  // hashing reads and writes. The states of a pool of 10^5 blocks take
  // 400 KiB and mostly stay in a core's cache, where 24-byte records took
  // 2.4 MiB and missed on every release (bench/bench_step_cost.cpp).
  // A block is free exactly when its reference count is 0.
  struct BlockState {
    uint32_t ref_count : 30 = 0;
    uint32_t hashed : 1 = 0;   // holds content: hash_ and by_hash_ name it unless pending
    uint32_t pending : 1 = 0;  // hashed, but its hash is not computed yet (no map entry)
  };
  static_assert(sizeof(BlockState) == 4);
  // The fields' places in the state's word (check_invariants reads it
  // whole).
  static constexpr uint32_t kRefCountBits = (uint32_t{1} << 30) - 1;
  static constexpr int kHashedBit = 30;
  // The whole hash a block is stored under in by_hash_ (its own).
  struct HashOfBlock {
    const BlockHash* hashes;
    const BlockHash& operator()(BlockId b) const { return hashes[static_cast<size_t>(b)]; }
  };
  HashOfBlock hash_of() const { return {hash_.data()}; }
  // One reference fewer (precondition: ref_count > 0); at zero the block
  // counts as free and true is returned: the caller tells the order, one
  // block (release) or a window of them (release_backwards) at a time.
  bool unreference(BlockId b);
  [[noreturn]] static void throw_release_of_free(BlockId b);
  [[noreturn]] static void throw_pending_not_allowed();
  // allocate_into() of one block under `lru`: the order's pop and the
  // prefetches of the next victims inline. Precondition: num_free() > 0.
  // Inline itself (below): a bulk decode's new block
  // (PagedPolicy::settle_and_grow, inline in the scheduler's bulk loop)
  // takes it with no call.
  inline void allocate_one_lru(std::vector<BlockId>& out);
  // allocate_into() of any count under any order.
  void allocate_several(int64_t count, std::vector<BlockId>& out);
  // allocate() once its victim `b` is named.
  inline void take(BlockId b);
  // take()'s part for a victim whose content has a map entry: the entry is
  // erased, the listener told.
  void forget_content(BlockId b);
  // The victim allocate() takes next. Precondition: num_free() > 0.
  BlockId pop_one_victim();
  // The distances of prefetch_upcoming: far enough that a load finishes
  // before the allocation that needs it (a decode step allocates a block
  // every few hundred nanoseconds), near enough that the lines stay in the
  // cache.
  static constexpr int64_t kStateAhead = 16;
  static constexpr int64_t kSlotAhead = 8;
  // Starts loading what the next allocations will read, after `taken`
  // victims were just taken: the state of the victim kStateAhead places on
  // and the map slot of the one kSlotAhead places on (its state and hash
  // were asked for earlier), so an allocation of one block at a time (a
  // decode crossing a block boundary) finds them loaded.
  void prefetch_upcoming(int64_t taken) const;
  // prefetch_upcoming(1) under `lru`: the two victims newly within the
  // distances, read from the ring, where the general loops asked the order
  // for its array (a virtual call) to walk one entry each.
  // Always inline: GCC 12 -O3 dropped the call to a helper whose only
  // effects are prefetches (no side effect to it) when it did not inline
  // it early, prefetches and all (seen in the disassembly of
  // allocate_one_lru).
  [[gnu::always_inline]] inline void prefetch_upcoming_one_lru() const;
  // release_backwards() under `lru`.
  void release_backwards_lru(std::span<const BlockId> blocks);

  // All-zero bytes are a free block with no content (TrivialArray::zeroed);
  // a block's hash is read only while it holds content, after
  // register_hash or mark_pending wrote it (TrivialArray::unwritten).
  TrivialArray<BlockState> state_;
  TrivialArray<BlockHash> hash_;
  std::unique_ptr<EvictionOrder> order_;
  int64_t num_free_ = 0;
  int64_t num_cached_free_ = 0;
  uint64_t evictions_ = 0;
  BlockHashTable by_hash_;
  BlockEvictionListener* listener_ = nullptr;
  KvEventListener* kv_events_ = nullptr;
  // order_->uses_content(), asked once: an order's answer never changes,
  // and a block fill would otherwise make a virtual call to learn it.
  bool order_uses_content_ = true;
  // order_ when it is `lru` (the default, and every benchmark's), else
  // null: the hot calls (one-block allocation, release of a finished
  // sequence) then go to the final class, inline, rather than through the
  // virtual interface.
  LruOrder* lru_ = nullptr;
};

inline void BlockPool::take(BlockId b) {
  BlockState& st = state_[static_cast<size_t>(b)];
  --num_free_;
  if (st.hashed) {
    --num_cached_free_;
    ++evictions_;
    // A pending block was evicted before anyone needed its hash: no map
    // entry to erase (the deferral's owner forgets it by its pending bit
    // being gone).
    if (!st.pending) forget_content(b);
  }
  st = BlockState{.ref_count = 1};  // its content, if any, is gone
}

inline void BlockPool::prefetch_upcoming_one_lru() const {
  if (const BlockId b = lru_->entry_ahead(kStateAhead - 1); b != kNoBlock) {
    __builtin_prefetch(&state_[static_cast<size_t>(b)]);
    __builtin_prefetch(&hash_[static_cast<size_t>(b)]);
  }
  if (const BlockId b = lru_->entry_ahead(kSlotAhead - 1); b != kNoBlock) {
    const BlockState st = state_[static_cast<size_t>(b)];
    if (st.hashed && !st.pending) by_hash_.prefetch(hash_[static_cast<size_t>(b)]);
  }
}

inline void BlockPool::allocate_one_lru(std::vector<BlockId>& out) {
  const BlockId b = lru_->pop_oldest();
  out.push_back(b);
  take(b);
  prefetch_upcoming_one_lru();
}

// BlockPool::mark_pending() and prefetch_mark() for a run of calls (a
// step's decodes filling their blocks on their chains, ~130K a run at batch
// 1,024): the pool's arrays, and whether it allows pending blocks, read once
// when taken rather than through the pool at every call. Valid while the
// pool's listener stays as it was (within one call of its policy).
class BlockPool::PendingMarks {
 public:
  void prefetch(BlockId block) const {
    __builtin_prefetch(&states_[static_cast<size_t>(block)], 1);
    __builtin_prefetch(&hashes_[static_cast<size_t>(block)], 1);
  }
  bool mark(BlockId block, uint32_t tag) const {
    BlockState& st = states_[static_cast<size_t>(block)];
    if (st.hashed) return false;
    if (!allowed_) throw_pending_not_allowed();
    st.hashed = 1;
    st.pending = 1;
    hashes_[static_cast<size_t>(block)] = BlockHash{tag, 0};
    return true;
  }

 private:
  friend class BlockPool;
  PendingMarks(BlockState* states, BlockHash* hashes, bool allowed)
      : states_(states), hashes_(hashes), allowed_(allowed) {}
  BlockState* states_;
  BlockHash* hashes_;
  bool allowed_;
};

inline BlockPool::PendingMarks BlockPool::pending_marks() {
  return {state_.data(), hash_.data(),
          listener_ == nullptr && kv_events_ == nullptr && !order_uses_content_};
}

}  // namespace kvsim
