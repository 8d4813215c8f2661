#include "sim/cache/block_pool.hpp"

#include <fmt/format.h>

#include <algorithm>
#include <array>
#include <bit>
#include <cstring>
#include <stdexcept>

#include "sim/cache/eviction/eviction_registry.hpp"
#include "sim/cache/eviction/lru_order.hpp"

namespace kvsim {

BlockPool::BlockPool(const BlockPoolParams& params)
    : BlockPool(params, make_eviction_order(params.eviction)) {}

BlockPool::BlockPool(const BlockPoolParams& params, std::unique_ptr<EvictionOrder> order)
    : order_(std::move(order)) {
  if (!order_) throw std::invalid_argument("block pool without an eviction order");
  order_uses_content_ = order_->uses_content();
  lru_ = dynamic_cast<LruOrder*>(order_.get());
  if (params.num_blocks < 0 || params.num_blocks > std::numeric_limits<BlockId>::max()) {
    throw std::invalid_argument(fmt::format("block pool of {} blocks", params.num_blocks));
  }
  state_ = TrivialArray<BlockState>::zeroed(static_cast<size_t>(params.num_blocks));
  hash_ = TrivialArray<BlockHash>::unwritten(static_cast<size_t>(params.num_blocks));
  // The map holds at most one hash per block: sized for them all, it never
  // grows (nor rehashes, nor faults in new pages) during a run. A caller
  // that expects fewer sizes it for those (a smaller map to clear here,
  // and to keep in cache while it is used).
  const int64_t expected = params.expected_hashes < 0
                               ? params.num_blocks
                               : std::min(params.expected_hashes, params.num_blocks);
  by_hash_.reserve(static_cast<size_t>(expected));
  order_->reserve(params.num_blocks);
  // Freed in id order: under `lru` a fresh pool hands out blocks 0, 1, 2...
  // (no block holds a hash yet).
  num_free_ = params.num_blocks;
  order_->on_evictable_range(0, params.num_blocks);
}

bool BlockPool::unreference(BlockId b) {
  BlockState& st = state_[static_cast<size_t>(b)];
  if (--st.ref_count != 0) return false;
  ++num_free_;
  if (st.hashed) ++num_cached_free_;
  return true;
}

void BlockPool::throw_release_of_free(BlockId b) {
  throw std::logic_error(fmt::format("release of block {} with reference count 0", b));
}

void BlockPool::forget_content(BlockId b) {
  const BlockHash& hash = hash_[static_cast<size_t>(b)];
  const bool erased = by_hash_.erase(hash, b, hash_of());  // only if `b` is the canonical copy
  if (erased && kv_events_ != nullptr) kv_events_->on_block_removed(hash);
  if (listener_) listener_->on_block_evicted(hash);
}

BlockId BlockPool::pop_one_victim() {
  return lru_ != nullptr ? lru_->pop_oldest() : order_->pop_victim();
}

BlockId BlockPool::allocate() {
  if (num_free_ == 0) throw std::logic_error("allocate() on an empty block pool");
  const BlockId b = pop_one_victim();
  take(b);
  prefetch_upcoming(1);
  return b;
}

void BlockPool::allocate_several(int64_t count, std::vector<BlockId>& out) {
  if (count <= 0) return;
  if (count > num_free_) throw std::logic_error("allocate_into() beyond the free blocks");
  if (count == 1) {  // a decode's new block: no windows to set up
    const BlockId b = pop_one_victim();
    out.push_back(b);
    take(b);
    prefetch_upcoming(1);
    return;
  }
  // No order call happens inside take(), so popping every victim first
  // yields the sequence of interleaved allocate() calls.
  const size_t first = out.size();
  order_->pop_victims(count, out);
  const BlockId* victims = out.data() + first;
  const auto n = static_cast<size_t>(count);
  // In windows: every victim's state and hash are requested, then the map
  // slot of every hashed victim's content (its hash has come in meanwhile),
  // then the victims are taken, so the cache misses of a window overlap
  // instead of coming one after another (a prefill chunk takes dozens of
  // blocks). The first victims were prefetched by the allocations before.
  constexpr size_t kWindow = 32;
  for (size_t begin = 0; begin < n; begin += kWindow) {
    const size_t end = std::min(n, begin + kWindow);
    for (size_t i = begin; i < end; ++i) {
      __builtin_prefetch(&state_[static_cast<size_t>(victims[i])]);
      __builtin_prefetch(&hash_[static_cast<size_t>(victims[i])]);
    }
    for (size_t i = begin; i < end; ++i) {
      const auto v = static_cast<size_t>(victims[i]);
      if (state_[v].hashed && !state_[v].pending) by_hash_.prefetch(hash_[v]);
    }
    for (size_t i = begin; i < end; ++i) take(victims[i]);
  }
  prefetch_upcoming(count);
}

void BlockPool::prefetch_upcoming(int64_t taken) const {
  if (taken == 1 && lru_ != nullptr) {
    prefetch_upcoming_one_lru();
    return;
  }
  // One call for every upcoming victim the order names.
  const std::span<const BlockId> ahead = order_->victims_ahead();
  const auto state_end = std::min<size_t>(ahead.size(), kStateAhead);
  for (auto i = static_cast<size_t>(kStateAhead - std::min(taken, kStateAhead)); i < state_end;
       ++i) {
    if (ahead[i] == kNoBlock) continue;  // gone
    __builtin_prefetch(&state_[static_cast<size_t>(ahead[i])]);
    __builtin_prefetch(&hash_[static_cast<size_t>(ahead[i])]);
  }
  const auto slot_end = std::min<size_t>(ahead.size(), kSlotAhead);
  for (auto i = static_cast<size_t>(kSlotAhead - std::min(taken, kSlotAhead)); i < slot_end; ++i) {
    if (ahead[i] == kNoBlock) continue;
    const auto v = static_cast<size_t>(ahead[i]);
    const BlockState st = state_[v];
    if (st.hashed && !st.pending) by_hash_.prefetch(hash_[v]);
  }
}

void BlockPool::touch(BlockId b) {
  BlockState& st = state_[static_cast<size_t>(b)];
  if (st.ref_count == 0) {
    --num_free_;
    if (st.hashed) --num_cached_free_;
    order_->on_pinned(b);
  }
  order_->on_access(b);
  ++st.ref_count;
}

void BlockPool::add_reference(BlockId b) {
  BlockState& st = state_[static_cast<size_t>(b)];
  if (st.ref_count == 0)
    throw std::logic_error(fmt::format("block {}: a reference added to a free block", b));
  ++st.ref_count;
}

void BlockPool::release(BlockId b) {
  if (ref_count(b) == 0) throw_release_of_free(b);
  if (unreference(b)) order_->on_evictable(b);
}

void BlockPool::release_backwards(std::span<const BlockId> blocks) {
  if (lru_ != nullptr) {
    release_backwards_lru(blocks);
    return;
  }
  constexpr size_t kWindow = 16;
  std::array<BlockId, kWindow> freed{};  // of this window, in release order
  size_t num_freed = 0;
  // The order hears of a window's freed blocks in one call, in the order
  // one release() at a time would have told it.
  auto tell_order = [&] {
    order_->on_evictable_each({freed.data(), num_freed});
    num_freed = 0;
  };
  // A window's states and order entries are requested while the window
  // before it (later in the table) is released, so its misses overlap that
  // work instead of stalling the first releases of the window.
  auto request = [&](size_t end) {
    const size_t begin = end > kWindow ? end - kWindow : 0;
    for (size_t i = begin; i < end; ++i)
      if (blocks[i] != kNoBlock) __builtin_prefetch(&state_[static_cast<size_t>(blocks[i])]);
    order_->prefetch_each(blocks.subspan(begin, end - begin));
  };
  if (!blocks.empty()) request(blocks.size());
  for (size_t end = blocks.size(); end > 0;) {
    const size_t begin = end > kWindow ? end - kWindow : 0;
    if (begin > 0) request(begin);
    for (size_t i = end; i-- > begin;) {
      const BlockId b = blocks[i];
      if (b == kNoBlock) continue;
      if (ref_count(b) == 0) {
        tell_order();  // the releases before it stand
        throw_release_of_free(b);
      }
      if (unreference(b)) freed[num_freed++] = b;
    }
    tell_order();
    end = begin;
  }
}

void BlockPool::release_backwards_lru(std::span<const BlockId> blocks) {
  // The general path's windows, with lru told of each freed block at once
  // through an appender that keeps the ring's end in registers, and the
  // pool's counts summed locally: no call and no store of a count per
  // block. The ids are the pool's, all given places by the constructor.
  // Two windows are requested ahead of the one released, not one: a
  // finished sequence's table (a few dozen blocks) is then requested
  // whole before its first release, which with one window ahead stalled
  // on the states it had just requested.
  constexpr size_t kWindow = 16;
  LruOrder::FreedAppender order(*lru_, blocks.size());
  BlockState* const states = state_.data();
  const BlockId* const ids = blocks.data();
  int64_t cached = 0;
  // Always inline, or GCC 12 may drop it (see prefetch_upcoming_one_lru).
  auto request = [&](size_t begin, size_t end) __attribute__((always_inline)) {
    for (size_t i = begin; i < end; ++i) {
      const BlockId b = ids[i];
      if (b == kNoBlock) continue;
      __builtin_prefetch(&states[static_cast<size_t>(b)], 1);
      order.prefetch(b);
    }
  };
  size_t requested = blocks.size() > 2 * kWindow ? blocks.size() - 2 * kWindow : 0;
  request(requested, blocks.size());
  for (size_t end = blocks.size(); end > 0;) {
    const size_t begin = end > kWindow ? end - kWindow : 0;
    if (requested > 0) {
      const size_t from = requested > kWindow ? requested - kWindow : 0;
      request(from, requested);
      requested = from;
    }
    for (size_t i = end; i-- > begin;) {
      const BlockId b = ids[i];
      if (b == kNoBlock) continue;
      BlockState& st = states[static_cast<size_t>(b)];
      auto word = std::bit_cast<uint32_t>(st);
      if ((word & kRefCountBits) == 0) {
        num_free_ += static_cast<int64_t>(order.pushed());  // the releases before it stand
        num_cached_free_ += cached;
        throw_release_of_free(b);
      }
      --word;  // the reference count, which is not 0
      st = std::bit_cast<BlockState>(word);
      if ((word & kRefCountBits) != 0) continue;
      cached += (word >> kHashedBit) & 1;
      order.push(b);
    }
    end = begin;
  }
  num_free_ += static_cast<int64_t>(order.pushed());
  num_cached_free_ += cached;
}

BlockId BlockPool::lookup(const BlockHash& hash) const {
  return by_hash_.find(hash, hash_of());
}

void BlockPool::register_hash(BlockId b, const BlockHash& hash) {
  BlockState& st = state_[static_cast<size_t>(b)];
  if (st.hashed) return;  // content of a full block never changes
  // The table confirms a match on the whole hash, read from hash_: block b's
  // own entry holds its previous content until the insert has succeeded.
  // Another block already holds this content: that one stays canonical.
  if (!by_hash_.insert(hash, b, hash_of())) return;
  st.hashed = 1;
  hash_[static_cast<size_t>(b)] = hash;
  if (order_uses_content_) order_->on_content(b, hash.low);  // else a no-op by contract
  if (kv_events_ != nullptr) kv_events_->on_block_stored(hash);
}

void BlockPool::throw_pending_not_allowed() {
  throw std::logic_error("a pending block in a pool that must see every content hash");
}

void BlockPool::register_pending(BlockId b, const BlockHash& hash) {
  BlockState& st = state_[static_cast<size_t>(b)];
  if (!st.pending) throw std::logic_error(fmt::format("block {} is not pending", b));
  if (!by_hash_.insert(hash, b, hash_of()))
    throw std::logic_error(
        fmt::format("block {}'s deferred hash is already held by block {}", b, lookup(hash)));
  st.pending = 0;
  hash_[static_cast<size_t>(b)] = hash;
  order_->on_content(b, hash.low);
  if (kv_events_ != nullptr) kv_events_->on_block_stored(hash);
}

std::vector<BlockId> BlockPool::free_queue() const {
  return order_->victims_in_order();
}

void BlockPool::check_invariants() const {
  // A block is free exactly when its reference count is 0; the order must
  // hold exactly those (asked of it by id, in one pass beside the states).
  // Without a branch per block (the check ends every run, over 10^5
  // blocks): the counts, and one bit for any order entry that is in use,
  // so the loop vectorises; the entry is looked for again to name it.
  uint32_t free_count = 0;
  uint32_t cached = 0;
  uint32_t in_order = 0;
  uint32_t held_in_use = 0;
  static_assert(std::bit_cast<uint32_t>(BlockState{5, 1, 0}) == (5u | uint32_t{1} << kHashedBit));
  const BlockState* states = state_.data();
  auto visit = [&](size_t b, uint32_t listed) {
    // The state as one word (the bit-fields read one by one kept GCC from
    // vectorising the loop).
    uint32_t word = 0;
    std::memcpy(&word, &states[b], sizeof word);
    const uint32_t is_free = (word & kRefCountBits) == 0 ? 1 : 0;
    free_count += is_free;
    cached += is_free & (word >> kHashedBit);  // is_free is 0 or 1: the hashed bit alone
    in_order += listed;
    held_in_use |= listed & (is_free ^ 1);
  };
  if (lru_ != nullptr) {
    // `lru` lists its entries by id beside the states: no flags to build.
    lru_->visit_evictable(num_blocks(), visit);
  } else {
    const std::vector<uint8_t> evictable = order_->evictable_flags(num_blocks());
    for (size_t b = 0; b < state_.size(); ++b) visit(b, evictable[b]);
  }
  if (held_in_use != 0) {
    const std::vector<uint8_t> evictable = order_->evictable_flags(num_blocks());
    for (size_t b = 0; b < state_.size(); ++b)
      if (evictable[b] && state_[b].ref_count != 0)
        throw std::logic_error(fmt::format("eviction order holds block {}, which is not free", b));
  }
  if (free_count != num_free_ || cached != num_cached_free_ || in_order != num_free_) {
    throw std::logic_error(
        fmt::format("free count {} (cached {}) but bookkeeping says {} ({}), the {} order {}",
                    free_count, cached, num_free_, num_cached_free_, order_->name(), in_order));
  }
}

}  // namespace kvsim
