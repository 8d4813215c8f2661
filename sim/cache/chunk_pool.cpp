#include "sim/cache/chunk_pool.hpp"

#include <fmt/format.h>

#include <stdexcept>

#include "sim/cache/eviction/eviction_registry.hpp"
#include "sim/cache/recycled_index.hpp"

namespace kvsim {

ChunkPool::ChunkPool(const ChunkPoolParams& params)
    : ChunkPool(params, make_eviction_order(params.eviction)) {}

ChunkPool::ChunkPool(const ChunkPoolParams& params, std::unique_ptr<EvictionOrder> order)
    : params_(params), blocks_({params.num_blocks}), order_(std::move(order)) {
  if (!order_) throw std::invalid_argument("chunk pool without an eviction order");
  if (params.block_size <= 0)
    throw std::invalid_argument("chunk pool: block_size must be positive");
  if (params.max_chunks <= 0)
    throw std::invalid_argument("chunk pool: max_chunks must be positive");
}

bool ChunkPool::touch(const BlockHash& hash) {
  auto it = index_.find(hash);
  if (it == index_.end()) return false;
  order_->on_access(it->second);
  return true;
}

const std::vector<BlockId>& ChunkPool::blocks_of(const BlockHash& hash) const {
  static const std::vector<BlockId> kNone;
  auto it = index_.find(hash);
  return it == index_.end() ? kNone : entries_[static_cast<size_t>(it->second)].blocks;
}

void ChunkPool::evict(EvictableId id) {
  Entry& victim = entries_[static_cast<size_t>(id)];
  for (BlockId b : victim.blocks) blocks_.release(b);
  victim.blocks.clear();
  tokens_held_ -= victim.tokens;
  index_.erase(victim.hash);
  free_entries_.push_back(id);
  ++evictions_;
}

void ChunkPool::insert(const BlockHash& hash, int64_t tokens, std::vector<BlockHash>* evicted) {
  if (contains(hash)) throw std::logic_error("chunk pool: insert of a chunk already held");
  if (!can_hold(tokens)) {
    throw std::logic_error(fmt::format("chunk pool: a chunk of {} tokens cannot fit {} blocks",
                                       tokens, blocks_.num_blocks()));
  }
  const int64_t need = blocks_for(tokens);
  // Seed 003 evict_lru_until_enough, in the pool's order.
  while (blocks_.num_free() < need || num_chunks() >= params_.max_chunks) {
    const EvictableId victim = order_->pop_victim();
    if (evicted) evicted->push_back(entries_[static_cast<size_t>(victim)].hash);
    evict(victim);
  }
  const EvictableId id = take_recycled_index(entries_, free_entries_);
  Entry& e = entries_[static_cast<size_t>(id)];
  e.hash = hash;
  e.tokens = tokens;
  e.blocks.reserve(static_cast<size_t>(need));
  for (int64_t i = 0; i < need; ++i) e.blocks.push_back(blocks_.allocate());
  tokens_held_ += tokens;
  index_.emplace(hash, id);
  order_->on_content(id, hash.low);
  order_->on_evictable(id);
}

void ChunkPool::clear() {
  // Victim order, so the chunks' blocks return to their pool in the same
  // order as if each had been evicted.
  for (EvictableId id : order_->victims_in_order()) {
    order_->on_pinned(id);
    for (BlockId b : entries_[static_cast<size_t>(id)].blocks) blocks_.release(b);
  }
  entries_.clear();
  free_entries_.clear();
  index_.clear();
  tokens_held_ = 0;
}

std::vector<BlockHash> ChunkPool::victim_order() const {
  std::vector<BlockHash> order;
  for (EvictableId id : order_->victims_in_order())
    order.push_back(entries_[static_cast<size_t>(id)].hash);
  return order;
}

void ChunkPool::check_invariants() const {
  blocks_.check_invariants();
  int64_t held = 0;
  for (const auto& [hash, id] : index_)
    held += static_cast<int64_t>(entries_[static_cast<size_t>(id)].blocks.size());
  const size_t ordered = order_->victims_in_order().size();
  if (held != blocks_.num_used() || ordered != index_.size() ||
      entries_.size() != index_.size() + free_entries_.size()) {
    throw std::logic_error(fmt::format(
        "chunk pool: {} chunks hold {} blocks but {} are in use ({} in the {} order, {} entries)",
        index_.size(), held, blocks_.num_used(), ordered, order_->name(), entries_.size()));
  }
}

}  // namespace kvsim
