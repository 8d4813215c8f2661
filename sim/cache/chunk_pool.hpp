#pragma once
// Seed 003's chunk pool (ChunkBlockPool + ChunkHashIndex): position-independent
// chunk KV keyed by content hash, in blocks of its own pool beside the main
// KV pool, evicted in the pool's eviction order (seed 003: least recently
// used first, the `lru` order). Metadata only: which chunk holds which
// blocks (DESIGN practice 9); the ranking lives in the order, tensor storage
// in kernels/.
//
// A chunk is used (hit, or inserted after a miss) when a request is admitted:
// its KV is copied into the request's main-pool blocks right then, so the
// pool never pins a chunk for a running request and any chunk may be evicted.
#include <cstdint>
#include <memory>
#include <string>
#include <unordered_map>
#include <vector>

#include "sim/cache/block_hash.hpp"
#include "sim/cache/block_pool.hpp"
#include "sim/cache/eviction/eviction_order.hpp"

namespace kvsim {

struct ChunkPoolParams {
  int64_t num_blocks = 0;
  int64_t block_size = 0;        // tokens per block
  int64_t max_chunks = 0;        // chunks held at most (seed 003 max_chunks)
  std::string eviction = "lru";  // which chunk goes first; a name of eviction_order_names()
};

class ChunkPool {
 public:
  // The order named by params.eviction.
  explicit ChunkPool(const ChunkPoolParams& params);
  // An order given directly (params.eviction is not read).
  ChunkPool(const ChunkPoolParams& params, std::unique_ptr<EvictionOrder> order);

  int64_t blocks_for(int64_t tokens) const {
    return (tokens + params_.block_size - 1) / params_.block_size;
  }
  // A chunk of this many tokens fits in the pool at all (after evicting
  // everything else).
  bool can_hold(int64_t tokens) const { return blocks_for(tokens) <= blocks_.num_blocks(); }
  bool contains(const BlockHash& hash) const { return index_.count(hash) > 0; }

  // A hit, reported to the eviction order (under `lru` the chunk becomes the
  // most recently used). False when absent.
  bool touch(const BlockHash& hash);
  // Blocks the chunk occupies (empty when absent).
  const std::vector<BlockId>& blocks_of(const BlockHash& hash) const;
  // Inserts a chunk (precondition: absent and can_hold(tokens)), evicting the
  // order's victims until its blocks are free and the chunk count is below
  // max_chunks. Evicted hashes are appended to `evicted` when given.
  void insert(const BlockHash& hash, int64_t tokens, std::vector<BlockHash>* evicted = nullptr);
  // Drops every chunk (seed 003 ChunkCacheManager.clear()).
  void clear();

  int64_t num_chunks() const { return static_cast<int64_t>(index_.size()); }
  int64_t num_blocks() const { return blocks_.num_blocks(); }
  int64_t free_blocks() const { return blocks_.num_free(); }
  int64_t tokens_held() const { return tokens_held_; }
  uint64_t evictions() const { return evictions_; }
  const EvictionOrder& eviction_order() const { return *order_; }
  // Hashes held, next victim first (tests; under `lru` from least to most
  // recently used).
  std::vector<BlockHash> victim_order() const;
  // Throws std::logic_error when blocks, chunks and the order disagree.
  void check_invariants() const;

 private:
  // A chunk held, by EvictableId (its index in entries_).
  struct Entry {
    BlockHash hash;
    int64_t tokens = 0;
    std::vector<BlockId> blocks;
  };
  void evict(EvictableId id);

  ChunkPoolParams params_;
  // The chunks' own blocks: they hold no hash, so the free order only picks
  // block ids and `lru` (free queue order) is kept whatever params.eviction.
  BlockPool blocks_;
  std::unique_ptr<EvictionOrder> order_;
  std::vector<Entry> entries_;
  std::vector<EvictableId> free_entries_;  // indices of entries_ not holding a chunk
  std::unordered_map<BlockHash, EvictableId, BlockHashHasher> index_;
  int64_t tokens_held_ = 0;
  uint64_t evictions_ = 0;
};

}  // namespace kvsim
