#pragma once
// Content hash -> block id, for BlockPool's prefix cache.
//
// Open addressing with linear probing in one flat array, instead of
// std::unordered_map's node per entry: a decode step registers the hash of
// every block it fills and evicts the one it reuses, so with a thousand
// running sequences these lookups were a third of a step's CPU
// (bench/bench_step_cost.cpp), mostly cache misses on nodes. The keys are
// XXH3-128 digests, already uniform, so the low bits index the table.
//
// An entry is 8 bytes: the value and 32 bits of its hash (which place it
// and tell most other hashes apart). The whole hash lives with the caller,
// who passes `hash_of(value)` to the calls that must tell two hashes apart
// for sure: a match is always confirmed on the whole 128 bits, so the table
// answers exactly as a map keyed by the whole hash would. A table for a
// pool of 33K blocks takes 1 MiB instead of the 3 MiB of 24-byte entries,
// so most probes hit a cache. Each value is stored under one hash at most
// (a block holds one content).
//
// Erase shifts later entries of the run back (no tombstones), so probes stay
// short however many blocks are evicted. Nothing iterates the table, so its
// layout can never leak into results.
#include <cstddef>
#include <cstdint>
#include <vector>

#include "sim/cache/block_hash.hpp"

namespace kvsim {

class BlockHashTable {
 public:
  using Value = int32_t;
  static constexpr Value kAbsent = -1;

  // The value stored for `hash`, or kAbsent. `hash_of(v)` is the whole hash
  // value v is stored under.
  template <class HashOf>
  Value find(const BlockHash& hash, const HashOf& hash_of) const {
    if (size_ == 0) return kAbsent;
    const uint32_t tag = tag_of(hash);
    for (size_t i = tag & mask_;; i = (i + 1) & mask_) {
      const Entry& e = entries_[i];
      if (e.value == kAbsent) return kAbsent;
      if (e.tag == tag && hash_of(e.value) == hash) return e.value;
    }
  }

  // Stores `value` (not kAbsent, not stored already) for `hash` unless the
  // hash is already present; returns whether it stored it. The caller makes
  // hash_of(value) == hash afterwards.
  template <class HashOf>
  bool insert(const BlockHash& hash, Value value, const HashOf& hash_of) {
    // At most half full: probe runs and backward shifts stay short.
    if (2 * (size_ + 1) > entries_.size()) grow();
    const uint32_t tag = tag_of(hash);
    size_t i = tag & mask_;
    for (; entries_[i].value != kAbsent; i = (i + 1) & mask_) {
      if (entries_[i].tag == tag && hash_of(entries_[i].value) == hash) return false;
    }
    entries_[i] = {tag, value};
    ++size_;
    return true;
  }

  // Removes `hash` if it is stored with `value`; returns whether it did.
  template <class HashOf>
  bool erase(const BlockHash& hash, Value value, const HashOf& hash_of) {
    if (size_ == 0) return false;
    const uint32_t tag = tag_of(hash);
    size_t i = tag & mask_;
    for (;; i = (i + 1) & mask_) {
      if (entries_[i].value == kAbsent) return false;
      if (entries_[i].value == value && entries_[i].tag == tag) break;
    }
    if (!(hash_of(value) == hash)) return false;
    // Backward-shift deletion: move up every later entry of the run that may
    // sit at the hole without passing its home slot.
    size_t hole = i;
    for (size_t j = (i + 1) & mask_; entries_[j].value != kAbsent; j = (j + 1) & mask_) {
      const size_t h = entries_[j].tag & mask_;
      // j's home lies cyclically in (hole, j]: it cannot move to the hole.
      const bool stays = hole <= j ? (hole < h && h <= j) : (hole < h || h <= j);
      if (stays) continue;
      entries_[hole] = entries_[j];
      hole = j;
    }
    entries_[hole].value = kAbsent;
    --size_;
    return true;
  }

  size_t size() const { return size_; }
  // Starts loading the slot a lookup of `hash` begins at (a hint: nothing
  // changes), so a caller with several hashes in hand waits on their cache
  // misses together rather than in turn.
  void prefetch(const BlockHash& hash) const {
    if (!entries_.empty()) __builtin_prefetch(&entries_[tag_of(hash) & mask_]);
  }

 private:
  struct Entry {
    uint32_t tag = 0;
    Value value = kAbsent;
  };

  // The hash's place bits: the table never grows past 2^32 entries.
  static uint32_t tag_of(const BlockHash& hash) {
    return static_cast<uint32_t>(BlockHashHasher{}(hash));
  }

  void grow() {
    std::vector<Entry> old = std::move(entries_);
    entries_.assign(old.empty() ? 64 : 2 * old.size(), Entry{});
    mask_ = entries_.size() - 1;
    for (const Entry& e : old) {
      if (e.value == kAbsent) continue;
      size_t i = e.tag & mask_;
      while (entries_[i].value != kAbsent) i = (i + 1) & mask_;
      entries_[i] = e;
    }
  }

  std::vector<Entry> entries_;
  size_t mask_ = 0;
  size_t size_ = 0;
};

}  // namespace kvsim
