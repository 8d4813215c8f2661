#pragma once
// Blocks filled by decodes inside a described output (TokenContent, one run
// of key K), registered in the prefix cache without computing their hashes:
// the bookkeeping that lets PagedPolicy compute them later, exactly as if
// they had been registered when they filled.
//
// Why deferring is exact. A block inside a run hashes as
// chained_stream_block_hash(parent, K, vocab, offset, count) with a domain
// tag that id hashes never carry, so (XXH3-128 collisions aside, as
// everywhere in the prefix cache) another block can have the same hash only
// if someone hashes a block inside a run of the same key K, with the same
// offset and the same parent chain. TokenContent's contract (workloads/
// token_content.hpp) says a workload describes content only where nobody
// holds the same ids generated, so the only parties are: a later prompt
// that quotes this output as a run of key K (a conversation's next turn),
// the same request re-admitted after a recompute preemption, or another
// request given the same key. Each of them computes K's hashes through the
// policy first (lookup_prefix's memo, a commit's hashing, swap-out), and the
// policy calls touch(K) before any of those: touch registers every block of
// K's chain still pending, in order, and marks K seen so that K never goes
// pending again. Until then nobody has a hash of K's content, so:
// - no lookup could have found a pending block (no one had its hash);
// - no other block could have registered the same hash first, so each
//   pending block is the canonical copy eager registration would have made
//   it, and registering it later leaves the map as eager registration
//   would have (the map's layout is never observed: block_hash_table.hpp);
// - a pending block evicted meanwhile would have had its entry erased at
//   that moment: it counts in evictions() and, while free, in
//   num_cached_free() (BlockPool counts pending as holding content), and its
//   chain skips it (its hash is still computed as the next one's parent);
// - the eviction order ignores content (EvictionOrder::uses_content), and
//   no listener or tier hears of evictions, so nothing else saw the hash.
// "Seen" is kept in a fixed-size Bloom filter: a false positive only keeps
// a key eager (exact, slower), and the memory stays flat however many
// prompts a run looks up. A chain's key is marked seen when the chain
// starts (so one key has one chain at most, and a second request given the
// same output key stays eager): touching a key not seen before needs no
// search for its chain.
//
// The short path of a fill (PagedPolicy::fill_on_chain) keeps nothing that
// could go stale: it asks, on every fill, whether the sequence still has a
// chain (what ends one clears it: a touch of K that materialises it, a
// swap-out, which touches K, a release, which detaches it) and whether the
// block is the one after the registered ones, its table's last (copied
// beside the content whenever the table grows). With a chain eager_end()
// defers every new block, so the short path appends exactly the block the
// long one would.
#include <cstdint>
#include <deque>
#include <utility>
#include <vector>

#include "sim/cache/block_hash.hpp"
#include "sim/cache/block_hash_table.hpp"
#include "sim/cache/block_pool.hpp"

namespace kvsim {

class PendingHashes {
 public:
  using ChainId = int32_t;  // an index into the chains, stable while the chain lives
  static constexpr ChainId kNoChain = -1;
  static constexpr int32_t kNoOwner = -1;

  // The hashes a materialised chain computed, and whose sequence it was.
  struct Materialised {
    int32_t owner = kNoOwner;  // the owner's slot, or kNoOwner once released
    std::vector<BlockHash> hashes;
  };

  // Whether some block of a run of this key may have been hashed or
  // deferred (never a false negative): a key with a chain is seen, so only
  // a key seen before can have one.
  bool seen(uint64_t key) const;
  // Starts loading what seen(key) reads (a hint: nothing changes).
  void prefetch_seen(uint64_t key) const;
  // Starts loading what seen(key) and then start(key, ...) read and write:
  // the filter word, the index's bucket and the chain record it would take
  // (a hint: nothing changes).
  void prefetch_start(uint64_t key) const;
  // Marks the key seen; returns whether it was already.
  bool note_seen(uint64_t key);
  ChainId find(uint64_t key) const;
  bool empty() const { return live_chains_ == 0; }

  // A new chain for key `key`: its first block will be the block at
  // `first_offset` of the stream (key, vocab), `count` tokens long, chained
  // on `anchor`. Precondition: !seen(key), which start() then marks. While its owner holds
  // them, the chain's blocks are the owner's to name (its block table); the
  // chain keeps a copy once the owner lets go (detach).
  ChainId start(uint64_t key, int64_t vocab, int64_t count, int64_t first_offset,
                const BlockHash& anchor, int32_t owner, const BlockPool& pool);
  uint32_t tag(ChainId chain) const { return chains_[static_cast<size_t>(chain)].tag; }
  uint64_t key(ChainId chain) const { return chains_[static_cast<size_t>(chain)].key; }
  int32_t owner(ChainId chain) const { return chains_[static_cast<size_t>(chain)].owner; }
  // The chain with tag `tag` appends `block` (in use, just filled): marks it
  // pending in the pool unless it already holds content.
  void append(uint32_t tag, BlockId block, BlockPool& pool) { pool.mark_pending(block, tag); }
  void append(uint32_t tag, BlockId block, const BlockPool::PendingMarks& marks) {
    marks.mark(block, tag);
  }
  // Starts loading what detach(chain, ...) writes (a hint: nothing changes).
  void prefetch(ChainId chain) const {
    const char* c = reinterpret_cast<const char*>(&chains_[static_cast<size_t>(chain)]);
    __builtin_prefetch(c, 1);
    __builtin_prefetch(c + sizeof(Chain) - 1, 1);
  }
  // The owner let go of its blocks, `blocks[0, count)` in chain order: the
  // chain lives on for those still pending.
  void detach(ChainId chain, const BlockId* blocks, int64_t count);
  // Computes the chain's hashes in order, registers the blocks it still
  // holds pending, and drops the chain. `blocks[0, count)` are its blocks
  // while its owner holds them (ignored once detached).
  Materialised materialise(ChainId chain, BlockPool& pool, const BlockId* blocks, int64_t count);
  // The chains alive now (any order), to materialise them all.
  std::vector<ChainId> chains() const;

 private:
  struct Chain {
    uint64_t key = 0;
    BlockHash key_hash;  // what index_ stores it under: the key, mixed
    int64_t vocab = 0;
    int64_t count = 0;  // tokens per block
    int64_t first_offset = 0;
    BlockHash anchor;
    std::vector<BlockId> blocks;  // once detached
    bool live = false;            // a chain, not a free entry of chains_
    uint32_t tag = 0;             // the pool keeps it beside each block it holds pending
    int32_t owner = kNoOwner;
  };

  // Drops the oldest detached chains none of whose blocks is still pending:
  // a chain of a finished sequence lasts until its blocks are reused, which
  // under lru happens about in the order the sequences let go of them.
  void sweep(const BlockPool& pool);
  bool holds(const Chain& c, BlockId b, const BlockPool& pool) const {
    return pool.is_pending(b) && pool.pending_tag(b) == c.tag;
  }
  void drop(ChainId id);
  // Room for the chains a pool of this size is likely to hold at once, at
  // the first start(): the index grew from empty through 8 rebuilds.
  void reserve_for(const BlockPool& pool);

  std::vector<Chain> chains_;
  std::vector<ChainId> free_chains_;
  // key -> chain, in the pool's own open-addressing table (no node per
  // chain: one starts with nearly every sequence).
  struct KeyOfChain {
    const std::vector<Chain>* chains;
    const BlockHash& operator()(ChainId id) const {
      return (*chains)[static_cast<size_t>(id)].key_hash;
    }
  };
  KeyOfChain key_of() const { return {&chains_}; }
  static BlockHash key_hash(uint64_t key);
  // note_seen() of the key whose mix is `h` (key_hash(key).low).
  bool note_seen_mixed(uint64_t h);
  BlockHashTable index_;
  int64_t live_chains_ = 0;
  uint32_t next_tag_ = 1;
  // Detached chains, oldest first, by (chain, tag): an entry whose chain
  // was materialised since (its tag changed) is skipped.
  std::deque<std::pair<ChainId, uint32_t>> detached_;
  std::vector<uint64_t> seen_bits_;  // allocated by the first note_seen()
};

}  // namespace kvsim
