#pragma once
// Content hash -> block id, for BlockPool's prefix cache.
//
// Open addressing with linear probing in one flat array, instead of
// std::unordered_map's node per entry: a decode step registers the hash of
// every block it fills and evicts the one it reuses, so with a thousand
// running sequences these lookups were a third of a step's CPU
// (bench/bench_step_cost.cpp), mostly cache misses on nodes. The keys are
// XXH3-128 digests, already uniform, so the low bits index the table.
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

  // The value stored for `hash`, or kAbsent.
  Value find(const BlockHash& hash) const {
    if (size_ == 0) return kAbsent;
    for (size_t i = home(hash);; i = (i + 1) & mask_) {
      const Entry& e = entries_[i];
      if (e.value == kAbsent) return kAbsent;
      if (e.hash == hash) return e.value;
    }
  }

  // Stores `value` (not kAbsent) for `hash` unless the hash is already
  // present; returns whether it stored it.
  bool insert(const BlockHash& hash, Value value) {
    if (2 * (size_ + 1) > entries_.size()) grow();
    size_t i = home(hash);
    for (; entries_[i].value != kAbsent; i = (i + 1) & mask_) {
      if (entries_[i].hash == hash) return false;
    }
    entries_[i] = {hash, value};
    ++size_;
    return true;
  }

  // Removes `hash` if it is stored with `value`; returns whether it did.
  bool erase(const BlockHash& hash, Value value) {
    if (size_ == 0) return false;
    size_t i = home(hash);
    for (;; i = (i + 1) & mask_) {
      if (entries_[i].value == kAbsent) return false;
      if (entries_[i].hash == hash) break;
    }
    if (entries_[i].value != value) return false;
    // Backward-shift deletion: move up every later entry of the run that may
    // sit at the hole without passing its home slot.
    size_t hole = i;
    for (size_t j = (i + 1) & mask_; entries_[j].value != kAbsent; j = (j + 1) & mask_) {
      const size_t h = home(entries_[j].hash);
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
    if (!entries_.empty()) __builtin_prefetch(&entries_[home(hash)]);
  }

 private:
  struct Entry {
    BlockHash hash;
    Value value = kAbsent;
  };

  size_t home(const BlockHash& hash) const { return BlockHashHasher{}(hash)&mask_; }

  void grow() {
    std::vector<Entry> old = std::move(entries_);
    entries_.assign(old.empty() ? 64 : 2 * old.size(), Entry{});
    mask_ = entries_.size() - 1;
    size_ = 0;
    for (const Entry& e : old) {
      if (e.value == kAbsent) continue;
      size_t i = home(e.hash);
      while (entries_[i].value != kAbsent) i = (i + 1) & mask_;
      entries_[i] = e;
      ++size_;
    }
  }

  std::vector<Entry> entries_;
  size_t mask_ = 0;
  size_t size_ = 0;
};

}  // namespace kvsim
