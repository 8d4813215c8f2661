#pragma once
// Metadata of a pool of KV blocks: reference counts, content hashes and the
// free queue. Tensor storage lives elsewhere (kernels/); this class only says
// which block holds what (DESIGN practice 9).
//
// Reuse follows vLLM's prefix cache: a block whose last reference goes away
// keeps its hash and goes to the TAIL of the free queue; allocation takes the
// HEAD, so the least recently freed block is reused (and its hash evicted)
// first, while a later request with the same prefix can revive a freed block
// until then.
#include <cstdint>
#include <limits>
#include <unordered_map>
#include <vector>

#include "sim/cache/block_hash.hpp"

namespace kvsim {

using BlockId = int32_t;
constexpr BlockId kNoBlock = -1;

class BlockPool {
 public:
  explicit BlockPool(int64_t num_blocks);

  int64_t num_blocks() const { return static_cast<int64_t>(blocks_.size()); }
  int64_t num_free() const { return num_free_; }
  int64_t num_used() const { return num_blocks() - num_free_; }
  // Free blocks that still hold a cached hash (revivable by a prefix hit).
  int64_t num_cached_free() const { return num_cached_free_; }

  // Takes the head of the free queue; its hash, if any, is evicted.
  // Precondition: num_free() > 0.
  BlockId allocate();
  // Adds a reference to a block found by hash (a prefix hit). A free block is
  // taken out of the free queue.
  void touch(BlockId block);
  // Drops one reference; at zero the block goes to the tail of the free queue
  // with its hash kept.
  void release(BlockId block);

  // Block holding this content, or kNoBlock.
  BlockId lookup(const BlockHash& hash) const;
  // Records that `block` (in use) now holds content `hash`. When another block
  // already holds that content, the mapping is left alone (both are valid
  // copies; the first stays canonical, as in vLLM).
  void register_hash(BlockId block, const BlockHash& hash);

  int32_t ref_count(BlockId block) const { return blocks_[static_cast<size_t>(block)].ref_count; }
  bool has_hash(BlockId block) const { return blocks_[static_cast<size_t>(block)].hashed; }

  uint64_t evictions() const { return evictions_; }
  // Free queue from head (next to reuse) to tail, for tests.
  std::vector<BlockId> free_queue() const;
  // Throws std::logic_error when a reference count is negative, a block is
  // both free and referenced, or the free count disagrees with the queue.
  void check_invariants() const;

 private:
  struct Block {
    int32_t ref_count = 0;
    BlockId prev = kNoBlock;  // free-queue links, valid while free
    BlockId next = kNoBlock;
    bool in_free_queue = false;
    bool hashed = false;
    BlockHash hash;
  };
  void unlink(BlockId b);
  void push_tail(BlockId b);

  std::vector<Block> blocks_;
  BlockId head_ = kNoBlock;
  BlockId tail_ = kNoBlock;
  int64_t num_free_ = 0;
  int64_t num_cached_free_ = 0;
  uint64_t evictions_ = 0;
  std::unordered_map<BlockHash, BlockId, BlockHashHasher> by_hash_;
};

}  // namespace kvsim
