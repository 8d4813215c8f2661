#include "sim/cache/block_pool.hpp"

#include <fmt/format.h>

#include <stdexcept>

namespace kvsim {

BlockPool::BlockPool(int64_t num_blocks) {
  if (num_blocks < 0 || num_blocks > std::numeric_limits<BlockId>::max()) {
    throw std::invalid_argument(fmt::format("block pool of {} blocks", num_blocks));
  }
  blocks_.resize(static_cast<size_t>(num_blocks));
  for (BlockId b = 0; b < static_cast<BlockId>(num_blocks); ++b) push_tail(b);
}

void BlockPool::unlink(BlockId b) {
  Block& blk = blocks_[static_cast<size_t>(b)];
  if (blk.prev != kNoBlock)
    blocks_[static_cast<size_t>(blk.prev)].next = blk.next;
  else
    head_ = blk.next;
  if (blk.next != kNoBlock)
    blocks_[static_cast<size_t>(blk.next)].prev = blk.prev;
  else
    tail_ = blk.prev;
  blk.prev = blk.next = kNoBlock;
  blk.in_free_queue = false;
  --num_free_;
  if (blk.hashed) --num_cached_free_;
}

void BlockPool::push_tail(BlockId b) {
  Block& blk = blocks_[static_cast<size_t>(b)];
  blk.prev = tail_;
  blk.next = kNoBlock;
  if (tail_ != kNoBlock)
    blocks_[static_cast<size_t>(tail_)].next = b;
  else
    head_ = b;
  tail_ = b;
  blk.in_free_queue = true;
  ++num_free_;
  if (blk.hashed) ++num_cached_free_;
}

BlockId BlockPool::allocate() {
  if (head_ == kNoBlock) throw std::logic_error("allocate() on an empty block pool");
  const BlockId b = head_;
  unlink(b);
  Block& blk = blocks_[static_cast<size_t>(b)];
  if (blk.hashed) {
    auto it = by_hash_.find(blk.hash);
    if (it != by_hash_.end() && it->second == b) by_hash_.erase(it);
    blk.hashed = false;
    ++evictions_;
  }
  blk.ref_count = 1;
  return b;
}

void BlockPool::touch(BlockId b) {
  Block& blk = blocks_[static_cast<size_t>(b)];
  if (blk.in_free_queue) unlink(b);
  ++blk.ref_count;
}

void BlockPool::release(BlockId b) {
  Block& blk = blocks_[static_cast<size_t>(b)];
  if (blk.ref_count <= 0) {
    throw std::logic_error(
        fmt::format("release of block {} with reference count {}", b, blk.ref_count));
  }
  if (--blk.ref_count == 0) push_tail(b);
}

BlockId BlockPool::lookup(const BlockHash& hash) const {
  auto it = by_hash_.find(hash);
  return it == by_hash_.end() ? kNoBlock : it->second;
}

void BlockPool::register_hash(BlockId b, const BlockHash& hash) {
  Block& blk = blocks_[static_cast<size_t>(b)];
  if (blk.hashed) return;  // content of a full block never changes
  auto [it, inserted] = by_hash_.try_emplace(hash, b);
  if (!inserted) return;  // another block already holds this content
  blk.hashed = true;
  blk.hash = hash;
}

std::vector<BlockId> BlockPool::free_queue() const {
  std::vector<BlockId> out;
  for (BlockId b = head_; b != kNoBlock; b = blocks_[static_cast<size_t>(b)].next) out.push_back(b);
  return out;
}

void BlockPool::check_invariants() const {
  int64_t free_count = 0;
  int64_t cached = 0;
  for (size_t i = 0; i < blocks_.size(); ++i) {
    const Block& blk = blocks_[i];
    if (blk.ref_count < 0)
      throw std::logic_error(fmt::format("block {} has reference count {}", i, blk.ref_count));
    if (blk.in_free_queue != (blk.ref_count == 0)) {
      throw std::logic_error(fmt::format("block {}: reference count {} but {} the free queue", i,
                                         blk.ref_count, blk.in_free_queue ? "in" : "not in"));
    }
    free_count += blk.in_free_queue ? 1 : 0;
    cached += (blk.in_free_queue && blk.hashed) ? 1 : 0;
  }
  if (free_count != num_free_ || cached != num_cached_free_) {
    throw std::logic_error(fmt::format("free count {} (cached {}) but bookkeeping says {} ({})",
                                       free_count, cached, num_free_, num_cached_free_));
  }
}

}  // namespace kvsim
