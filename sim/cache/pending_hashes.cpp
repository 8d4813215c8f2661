#include "sim/cache/pending_hashes.hpp"

#include <algorithm>
#include <stdexcept>

#include "sim/cache/recycled_index.hpp"

namespace kvsim {

namespace {

// 2^21 bits (256 KiB, per policy), two probes in one 64-bit word (one
// cache miss): about 1 false positive in 100 after 10^5 keys, 3 in 8 after
// 10^6 (each only keeps one output eager).
constexpr uint64_t kSeenWords = uint64_t{1} << 15;

uint64_t mix(uint64_t x) {  // splitmix64: test keys are small integers
  x += 0x9E3779B97F4A7C15ull;
  x = (x ^ (x >> 30)) * 0xBF58476D1CE4E5B9ull;
  x = (x ^ (x >> 27)) * 0x94D049BB133111EBull;
  return x ^ (x >> 31);
}

}  // namespace

uint64_t seen_mask(uint64_t h) {
  return (uint64_t{1} << ((h >> 32) % 64)) | (uint64_t{1} << ((h >> 40) % 64));
}

BlockHash PendingHashes::key_hash(uint64_t key) {
  return {mix(key), key};
}

bool PendingHashes::seen(uint64_t key) const {
  if (seen_bits_.empty()) return false;
  const uint64_t h = mix(key);
  const uint64_t mask = seen_mask(h);
  return (seen_bits_[h % kSeenWords] & mask) == mask;
}

void PendingHashes::prefetch_seen(uint64_t key) const {
  if (!seen_bits_.empty()) __builtin_prefetch(&seen_bits_[mix(key) % kSeenWords]);
}

void PendingHashes::prefetch_start(uint64_t key) const {
  prefetch_seen(key);
  index_.prefetch(key_hash(key));
  if (!free_chains_.empty()) {
    const char* c =
        reinterpret_cast<const char*>(&chains_[static_cast<size_t>(free_chains_.back())]);
    __builtin_prefetch(c, 1);
    __builtin_prefetch(c + sizeof(Chain) - 1, 1);
  }
}

bool PendingHashes::note_seen_mixed(uint64_t h) {
  if (seen_bits_.empty()) seen_bits_.assign(kSeenWords, 0);
  const uint64_t mask = seen_mask(h);
  uint64_t& word = seen_bits_[h % kSeenWords];
  const bool was = (word & mask) == mask;
  word |= mask;
  return was;
}

bool PendingHashes::note_seen(uint64_t key) {
  return note_seen_mixed(mix(key));
}

PendingHashes::ChainId PendingHashes::find(uint64_t key) const {
  if (live_chains_ == 0) return kNoChain;
  return index_.find(key_hash(key), key_of());
}

PendingHashes::ChainId PendingHashes::start(uint64_t key, int64_t vocab, int64_t count,
                                            int64_t first_offset, const BlockHash& anchor,
                                            int32_t owner, const BlockPool& pool) {
  // The key mixed once: the filter's bits and the index's hash are both of it.
  const BlockHash hash = key_hash(key);
  if (note_seen_mixed(hash.low)) throw std::logic_error("a pending chain for a key already seen");
  if (chains_.empty()) reserve_for(pool);
  // Every 16th start: when the oldest chain still holds a block (the
  // common case) a sweep costs the misses of one look at it.
  if ((next_tag_ & 15) == 0) sweep(pool);
  const ChainId id = take_recycled_index(chains_, free_chains_);
  Chain& c = chains_[static_cast<size_t>(id)];
  c.key = key;
  c.vocab = vocab;
  c.count = count;
  c.first_offset = first_offset;
  c.anchor = anchor;
  c.blocks.clear();
  c.live = true;
  // One tag per chain ever started: 2^32 sequences would have to pass
  // before a tag repeats.
  c.tag = next_tag_++;
  c.owner = owner;
  c.key_hash = hash;
  index_.insert(c.key_hash, id, key_of());
  ++live_chains_;
  return id;
}

void PendingHashes::reserve_for(const BlockPool& pool) {
  // A chain lives while its blocks are held or cached pending in the pool,
  // so the pool's size bounds the chains alive at once by its blocks per
  // chain: a sequence's output of 512 tokens holds 32 blocks of 16
  // (bench/bench_step_cost.cpp). Shorter outputs may need more: the table
  // and the vector then grow as before.
  constexpr int64_t kBlocksPerChain = 32;
  const auto chains =
      static_cast<size_t>(std::max<int64_t>(pool.num_blocks() / kBlocksPerChain, 1));
  chains_.reserve(chains);
  index_.reserve(chains);
}

void PendingHashes::detach(ChainId id, const BlockId* blocks, int64_t count) {
  Chain& c = chains_[static_cast<size_t>(id)];
  if (c.owner == kNoOwner) return;
  c.owner = kNoOwner;
  c.blocks.assign(blocks, blocks + count);
  detached_.emplace_back(id, c.tag);
}

PendingHashes::Materialised PendingHashes::materialise(ChainId id, BlockPool& pool,
                                                       const BlockId* blocks, int64_t count) {
  Chain& c = chains_[static_cast<size_t>(id)];
  Materialised out;
  out.owner = c.owner;
  if (c.owner == kNoOwner) {
    blocks = c.blocks.data();
    count = static_cast<int64_t>(c.blocks.size());
  }
  out.hashes.reserve(static_cast<size_t>(count));
  BlockHash parent = c.anchor;
  int64_t offset = c.first_offset;
  for (int64_t i = 0; i < count; ++i) {
    const BlockId b = blocks[i];
    // Evicted blocks are hashed too: each is the parent of the next.
    parent = chained_stream_block_hash(parent, c.key, c.vocab, offset, c.count);
    out.hashes.push_back(parent);
    if (holds(c, b, pool)) pool.register_pending(b, parent);
    offset += c.count;
  }
  drop(id);
  return out;
}

std::vector<PendingHashes::ChainId> PendingHashes::chains() const {
  std::vector<ChainId> ids;
  for (size_t i = 0; i < chains_.size(); ++i)
    if (chains_[i].live) ids.push_back(static_cast<ChainId>(i));
  return ids;
}

void PendingHashes::drop(ChainId id) {
  Chain& c = chains_[static_cast<size_t>(id)];
  index_.erase(c.key_hash, id, key_of());
  --live_chains_;
  c.blocks.clear();  // its room is reused by the next chain in this entry
  c.owner = kNoOwner;
  c.live = false;
  free_chains_.push_back(id);
}

void PendingHashes::sweep(const BlockPool& pool) {
  while (!detached_.empty()) {
    const auto [id, tag] = detached_.front();
    const Chain& c = chains_[static_cast<size_t>(id)];
    if (c.live && c.tag == tag) {
      // From the front: a sequence frees its tail first, so under lru its
      // first blocks are the last to be reused.
      if (std::any_of(c.blocks.begin(), c.blocks.end(),
                      [&](BlockId b) { return holds(c, b, pool); }))
        return;
      drop(id);
    }
    detached_.pop_front();
  }
}

}  // namespace kvsim
