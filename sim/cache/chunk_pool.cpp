#include "sim/cache/chunk_pool.hpp"

#include <fmt/format.h>

#include <stdexcept>

namespace kvsim {

ChunkPool::ChunkPool(const ChunkPoolParams& params) : params_(params), blocks_(params.num_blocks) {
  if (params.block_size <= 0)
    throw std::invalid_argument("chunk pool: block_size must be positive");
  if (params.max_chunks <= 0)
    throw std::invalid_argument("chunk pool: max_chunks must be positive");
}

bool ChunkPool::touch(const BlockHash& hash) {
  auto it = index_.find(hash);
  if (it == index_.end()) return false;
  lru_.splice(lru_.end(), lru_, it->second);  // to the most recent end
  return true;
}

const std::vector<BlockId>& ChunkPool::blocks_of(const BlockHash& hash) const {
  static const std::vector<BlockId> kNone;
  auto it = index_.find(hash);
  return it == index_.end() ? kNone : it->second->blocks;
}

void ChunkPool::evict_lru() {
  Entry& victim = lru_.front();
  for (BlockId b : victim.blocks) blocks_.release(b);
  tokens_held_ -= victim.tokens;
  index_.erase(victim.hash);
  lru_.pop_front();
  ++evictions_;
}

void ChunkPool::insert(const BlockHash& hash, int64_t tokens, std::vector<BlockHash>* evicted) {
  if (contains(hash)) throw std::logic_error("chunk pool: insert of a chunk already held");
  if (!can_hold(tokens)) {
    throw std::logic_error(fmt::format("chunk pool: a chunk of {} tokens cannot fit {} blocks",
                                       tokens, blocks_.num_blocks()));
  }
  const int64_t need = blocks_for(tokens);
  // Seed 003 evict_lru_until_enough: the least recently used go first.
  while (blocks_.num_free() < need || num_chunks() >= params_.max_chunks) {
    if (evicted) evicted->push_back(lru_.front().hash);
    evict_lru();
  }
  Entry e;
  e.hash = hash;
  e.tokens = tokens;
  e.blocks.reserve(static_cast<size_t>(need));
  for (int64_t i = 0; i < need; ++i) e.blocks.push_back(blocks_.allocate());
  tokens_held_ += tokens;
  lru_.push_back(std::move(e));
  index_[hash] = std::prev(lru_.end());
}

void ChunkPool::clear() {
  for (Entry& e : lru_)
    for (BlockId b : e.blocks) blocks_.release(b);
  lru_.clear();
  index_.clear();
  tokens_held_ = 0;
}

std::vector<BlockHash> ChunkPool::lru_order() const {
  std::vector<BlockHash> order;
  order.reserve(lru_.size());
  for (const Entry& e : lru_) order.push_back(e.hash);
  return order;
}

void ChunkPool::check_invariants() const {
  blocks_.check_invariants();
  int64_t held = 0;
  for (const Entry& e : lru_) held += static_cast<int64_t>(e.blocks.size());
  if (held != blocks_.num_used() || index_.size() != lru_.size()) {
    throw std::logic_error(
        fmt::format("chunk pool: {} chunks hold {} blocks but {} are in use ({} indexed)",
                    lru_.size(), held, blocks_.num_used(), index_.size()));
  }
}

}  // namespace kvsim
