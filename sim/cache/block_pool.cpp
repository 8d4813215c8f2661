#include "sim/cache/block_pool.hpp"

#include <fmt/format.h>

#include <algorithm>
#include <stdexcept>

#include "sim/cache/eviction/eviction_registry.hpp"

namespace kvsim {

BlockPool::BlockPool(const BlockPoolParams& params)
    : BlockPool(params, make_eviction_order(params.eviction)) {}

BlockPool::BlockPool(const BlockPoolParams& params, std::unique_ptr<EvictionOrder> order)
    : order_(std::move(order)) {
  if (!order_) throw std::invalid_argument("block pool without an eviction order");
  if (params.num_blocks < 0 || params.num_blocks > std::numeric_limits<BlockId>::max()) {
    throw std::invalid_argument(fmt::format("block pool of {} blocks", params.num_blocks));
  }
  blocks_.resize(static_cast<size_t>(params.num_blocks));
  // Freed in id order: under `lru` a fresh pool hands out blocks 0, 1, 2...
  for (BlockId b = 0; b < static_cast<BlockId>(params.num_blocks); ++b) mark_free(b);
}

void BlockPool::mark_free(BlockId b) {
  Block& blk = blocks_[static_cast<size_t>(b)];
  blk.free = true;
  ++num_free_;
  if (blk.hashed) ++num_cached_free_;
  order_->on_evictable(b);
}

BlockId BlockPool::allocate() {
  if (num_free_ == 0) throw std::logic_error("allocate() on an empty block pool");
  const BlockId b = order_->pop_victim();
  take(b);
  // The next allocation's block is a cache miss of its own (free blocks are
  // scattered): start loading it now.
  const BlockId next = order_->next_victim();
  if (next != kNoBlock) __builtin_prefetch(&blocks_[static_cast<size_t>(next)]);
  return b;
}

void BlockPool::allocate_into(int64_t count, std::vector<BlockId>& out) {
  if (count <= 0) return;
  if (count > num_free_) throw std::logic_error("allocate_into() beyond the free blocks");
  // No order call happens inside take(), so popping every victim first
  // yields the sequence of interleaved allocate() calls.
  const size_t first = out.size();
  order_->pop_victims(count, out);
  const BlockId* victims = out.data() + first;
  const auto n = static_cast<size_t>(count);
  // In windows: every victim's metadata is requested, then the map slot of
  // every hashed victim's content (its metadata has come in meanwhile), then
  // the victims are taken, so the cache misses of a window overlap instead
  // of coming one after another (a prefill chunk takes dozens of blocks).
  constexpr size_t kWindow = 32;
  for (size_t begin = 0; begin < n; begin += kWindow) {
    const size_t end = std::min(n, begin + kWindow);
    for (size_t i = begin; i < end; ++i)
      __builtin_prefetch(&blocks_[static_cast<size_t>(victims[i])]);
    for (size_t i = begin; i < end; ++i) {
      const Block& blk = blocks_[static_cast<size_t>(victims[i])];
      if (blk.hashed) by_hash_.prefetch(blk.hash);
    }
    for (size_t i = begin; i < end; ++i) take(victims[i]);
  }
}

void BlockPool::take(BlockId b) {
  Block& blk = blocks_[static_cast<size_t>(b)];
  blk.free = false;
  --num_free_;
  if (blk.hashed) {
    --num_cached_free_;
    by_hash_.erase(blk.hash, b, hash_of());  // only if `b` is the canonical copy
    blk.hashed = false;
    ++evictions_;
    if (listener_) listener_->on_block_evicted(blk.hash);
  }
  blk.ref_count = 1;
}

void BlockPool::touch(BlockId b) {
  Block& blk = blocks_[static_cast<size_t>(b)];
  if (blk.free) {
    blk.free = false;
    --num_free_;
    if (blk.hashed) --num_cached_free_;
    order_->on_pinned(b);
  }
  order_->on_access(b);
  ++blk.ref_count;
}

void BlockPool::release(BlockId b) {
  Block& blk = blocks_[static_cast<size_t>(b)];
  if (blk.ref_count <= 0) {
    throw std::logic_error(
        fmt::format("release of block {} with reference count {}", b, blk.ref_count));
  }
  if (--blk.ref_count == 0) mark_free(b);
}

BlockId BlockPool::lookup(const BlockHash& hash) const {
  return by_hash_.find(hash, hash_of());
}

void BlockPool::register_hash(BlockId b, const BlockHash& hash) {
  Block& blk = blocks_[static_cast<size_t>(b)];
  if (blk.hashed) return;  // content of a full block never changes
  // Another block already holds this content: that one stays canonical.
  if (!by_hash_.insert(hash, b, hash_of())) return;
  blk.hashed = true;
  blk.hash = hash;
  order_->on_content(b, hash.low);
}

std::vector<BlockId> BlockPool::free_queue() const {
  return order_->victims_in_order();
}

void BlockPool::check_invariants() const {
  int64_t free_count = 0;
  int64_t cached = 0;
  for (size_t i = 0; i < blocks_.size(); ++i) {
    const Block& blk = blocks_[i];
    if (blk.ref_count < 0)
      throw std::logic_error(fmt::format("block {} has reference count {}", i, blk.ref_count));
    if (blk.free != (blk.ref_count == 0)) {
      throw std::logic_error(fmt::format("block {}: reference count {} but {}", i, blk.ref_count,
                                         blk.free ? "free" : "not free"));
    }
    free_count += blk.free ? 1 : 0;
    cached += (blk.free && blk.hashed) ? 1 : 0;
  }
  const std::vector<BlockId> in_order = order_->victims_in_order();
  for (BlockId b : in_order) {
    if (b < 0 || b >= num_blocks() || !blocks_[static_cast<size_t>(b)].free)
      throw std::logic_error(fmt::format("eviction order holds block {}, which is not free", b));
  }
  if (free_count != num_free_ || cached != num_cached_free_ ||
      static_cast<int64_t>(in_order.size()) != num_free_) {
    throw std::logic_error(fmt::format(
        "free count {} (cached {}) but bookkeeping says {} ({}), the {} order {}", free_count,
        cached, num_free_, num_cached_free_, order_->name(), in_order.size()));
  }
}

}  // namespace kvsim
