#pragma once
// Seed 003's chunk pool (ChunkBlockPool + ChunkHashIndex): position-independent
// chunk KV keyed by content hash, in blocks of its own pool beside the main
// KV pool, evicted least-recently-used first. Metadata only: which chunk
// holds which blocks and in what recency order (DESIGN practice 9); tensor
// storage lives in kernels/.
//
// A chunk is used (hit, or inserted after a miss) when a request is admitted:
// its KV is copied into the request's main-pool blocks right then, so the
// pool never pins a chunk for a running request and any chunk may be evicted.
#include <cstdint>
#include <list>
#include <unordered_map>
#include <vector>

#include "sim/cache/block_hash.hpp"
#include "sim/cache/block_pool.hpp"

namespace kvsim {

struct ChunkPoolParams {
  int64_t num_blocks = 0;
  int64_t block_size = 0;  // tokens per block
  int64_t max_chunks = 0;  // chunks held at most (seed 003 max_chunks)
};

class ChunkPool {
 public:
  explicit ChunkPool(const ChunkPoolParams& params);

  int64_t blocks_for(int64_t tokens) const {
    return (tokens + params_.block_size - 1) / params_.block_size;
  }
  // A chunk of this many tokens fits in the pool at all (after evicting
  // everything else).
  bool can_hold(int64_t tokens) const { return blocks_for(tokens) <= blocks_.num_blocks(); }
  bool contains(const BlockHash& hash) const { return index_.count(hash) > 0; }

  // A hit: the chunk becomes the most recently used. False when absent.
  bool touch(const BlockHash& hash);
  // Blocks the chunk occupies (empty when absent).
  const std::vector<BlockId>& blocks_of(const BlockHash& hash) const;
  // Inserts a chunk (precondition: absent and can_hold(tokens)), evicting
  // least-recently-used chunks until its blocks are free and the chunk count
  // is below max_chunks. Evicted hashes are appended to `evicted` when given.
  void insert(const BlockHash& hash, int64_t tokens, std::vector<BlockHash>* evicted = nullptr);
  // Drops every chunk (seed 003 ChunkCacheManager.clear()).
  void clear();

  int64_t num_chunks() const { return static_cast<int64_t>(lru_.size()); }
  int64_t num_blocks() const { return blocks_.num_blocks(); }
  int64_t free_blocks() const { return blocks_.num_free(); }
  int64_t tokens_held() const { return tokens_held_; }
  uint64_t evictions() const { return evictions_; }
  // Hashes from least to most recently used (tests).
  std::vector<BlockHash> lru_order() const;
  // Throws std::logic_error when blocks and chunks disagree.
  void check_invariants() const;

 private:
  struct Entry {
    BlockHash hash;
    int64_t tokens = 0;
    std::vector<BlockId> blocks;
  };
  void evict_lru();

  ChunkPoolParams params_;
  BlockPool blocks_;
  std::list<Entry> lru_;  // front: least recently used
  std::unordered_map<BlockHash, std::list<Entry>::iterator, BlockHashHasher> index_;
  int64_t tokens_held_ = 0;
  uint64_t evictions_ = 0;
};

}  // namespace kvsim
