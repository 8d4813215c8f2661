#pragma once
// Content hash -> block id, for BlockPool's prefix cache.
//
// Open addressing in one flat array of buckets, instead of
// std::unordered_map's node per entry: a decode step registers the hash of
// every block it fills and evicts the one it reuses, so with a thousand
// running sequences these calls sit on the hot path of every step
// (bench/bench_block_fill.cpp). The keys are XXH3-128 digests, already
// uniform, so their bits place them directly.
//
// A bucket is one cache line of 8 entries, each 8 bytes: the value and 32
// bits of its hash (the tag, which tells most other hashes apart). A call
// compares all 8 tags (or values) of a bucket at once into a bit mask, so
// it costs one cache line and almost no unpredictable branch. With
// slot-by-slot linear probing, how many slots a probe or a backward shift
// visited varied at random; the buckets took a block fill from ~137 to
// ~118 ns (bench_block_fill at 1,024, same memory, load ~1.5). The whole
// hash lives with the caller, who passes `hash_of(value)` to the calls that
// must tell two hashes apart for sure: a match is always confirmed on the
// whole 128 bits, so the table answers exactly as a map keyed by the whole
// hash would. Each value is stored under one hash at most (a block holds
// one content).
//
// An entry lives in its home bucket or, when that is full, in the first
// later bucket with room. Each bucket counts the entries stored past it
// whose home is at or before it (overflow_): a search goes on to the next
// bucket only while that count is not zero, and erase decrements the counts
// it passed, so nothing is left behind (no tombstones) and a table that
// keeps churning at the same size never degrades. At most half the slots
// are used, so a home bucket is full for a few percent of inserts only.
// Nothing iterates the table, so its layout can never leak into results.
#include <bit>
#include <cstddef>
#include <cstdint>
#include <cstring>
#include <limits>
#include <memory>
#include <new>
#include <stdexcept>
#include <type_traits>
#include <utility>
#include <vector>

#if defined(__SSE2__)
#include <emmintrin.h>
#endif

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
    const size_t home = home_of(tag);
    for (size_t b = home;;) {
      const Bucket& bucket = buckets_[b];
      for (unsigned m = bucket.with_tag(tag); m != 0; m &= m - 1) {
        const Value v = bucket.values[first(m)];
        if (hash_of(v) == hash) return v;
      }
      if (overflow_[b] == 0) return kAbsent;
      b = (b + 1) & mask_;
      if (b == home) return kAbsent;  // every bucket looked at
    }
  }

  // Stores `value` (not kAbsent, not stored already) for `hash` unless the
  // hash is already present; returns whether it stored it. The caller makes
  // hash_of(value) == hash afterwards.
  template <class HashOf>
  bool insert(const BlockHash& hash, Value value, const HashOf& hash_of) {
    // At most half full: home buckets are rarely full.
    if (2 * (size_ + 1) > kSlots * buckets_.size()) grow();
    const uint32_t tag = tag_of(hash);
    const size_t home = home_of(tag);
    Bucket& bucket = buckets_[home];
    // The common case in one look at the home bucket: no entry of this
    // hash in it and none stored past it (so none anywhere: what find()
    // concludes there), and a free slot in it (the first, where place()
    // puts it).
    for (unsigned m = bucket.with_tag(tag); m != 0; m &= m - 1) {
      if (hash_of(bucket.values[first(m)]) == hash) return false;
    }
    if (overflow_[home] == 0) {
      if (const unsigned free_slots = bucket.with_value(kAbsent); free_slots != 0) {
        const int slot = first(free_slots);
        bucket.tags[slot] = tag;
        bucket.values[slot] = value;
        ++size_;
        return true;
      }
    } else if (find(hash, hash_of) != kAbsent) {
      return false;
    }
    while (!place(tag, value)) grow();
    ++size_;
    return true;
  }

  // Removes `hash` if it is stored with `value`; returns whether it did.
  template <class HashOf>
  bool erase(const BlockHash& hash, Value value, const HashOf& hash_of) {
    if (size_ == 0) return false;
    const uint32_t tag = tag_of(hash);
    const size_t home = home_of(tag);
    for (size_t b = home;; b = (b + 1) & mask_) {
      Bucket& bucket = buckets_[b];
      // A value is stored once: at most one slot holds it.
      const unsigned m = bucket.with_value(value) & bucket.with_tag(tag);
      if (m != 0) {
        if (!(hash_of(value) == hash)) return false;
        bucket.values[first(m)] = kAbsent;
        for (size_t k = home; k != b; k = (k + 1) & mask_) --overflow_[k];
        --size_;
        return true;
      }
      if (overflow_[b] == 0) return false;
      if (((b + 1) & mask_) == home) return false;  // every bucket looked at
    }
  }

  // Makes room for `entries` without growing again (a pool never holds
  // more hashes than blocks): one allocation and no rehash on the hot path,
  // where growing from small rehashed every entry at each doubling and
  // faulted in the new pages mid-run (bench/bench_step_cost.cpp).
  void reserve(size_t entries) {
    int bits = 3;
    while (kSlots * (size_t{1} << bits) < 2 * entries) ++bits;
    if ((size_t{1} << bits) > buckets_.size()) rebuild(bits);
  }

  size_t size() const { return size_; }
  size_t bucket_count() const { return buckets_.size(); }
  // Buckets a search must look past (tests: 0 once the table is empty
  // again, whatever it held). O(buckets).
  size_t overflowing_buckets() const {
    size_t n = 0;
    for (Overflow count : overflow_) n += count != 0 ? 1 : 0;
    return n;
  }
  // Starts loading the bucket a call about `hash` begins at (a hint:
  // nothing changes), so a caller with several hashes in hand waits on
  // their cache misses together rather than in turn.
  void prefetch(const BlockHash& hash) const {
    if (!buckets_.empty()) __builtin_prefetch(&buckets_[home_of(tag_of(hash))]);
  }

 private:
  static constexpr int kSlots = 8;
  struct alignas(64) Bucket {
    uint32_t tags[kSlots];
    Value values[kSlots];
    // Bit i set when slot i holds a value with this tag / holds `v`: four
    // vector compares (SSE2, part of every x86-64), or a branch-free loop.
    unsigned with_tag(uint32_t tag) const {
#if defined(__SSE2__)
      const __m128i t = _mm_set1_epi32(static_cast<int>(tag));
      const __m128i absent = _mm_set1_epi32(kAbsent);
      const __m128i* tv = reinterpret_cast<const __m128i*>(tags);
      const __m128i* vv = reinterpret_cast<const __m128i*>(values);
      const __m128i lo = _mm_andnot_si128(_mm_cmpeq_epi32(_mm_load_si128(vv), absent),
                                          _mm_cmpeq_epi32(_mm_load_si128(tv), t));
      const __m128i hi = _mm_andnot_si128(_mm_cmpeq_epi32(_mm_load_si128(vv + 1), absent),
                                          _mm_cmpeq_epi32(_mm_load_si128(tv + 1), t));
      return static_cast<unsigned>(_mm_movemask_ps(_mm_castsi128_ps(lo)) |
                                   (_mm_movemask_ps(_mm_castsi128_ps(hi)) << 4));
#else
      unsigned m = 0;
      for (int i = 0; i < kSlots; ++i)
        m |= static_cast<unsigned>((tags[i] == tag) & (values[i] != kAbsent)) << i;
      return m;
#endif
    }
    unsigned with_value(Value v) const {
#if defined(__SSE2__)
      const __m128i x = _mm_set1_epi32(v);
      const __m128i* vv = reinterpret_cast<const __m128i*>(values);
      const __m128i lo = _mm_cmpeq_epi32(_mm_load_si128(vv), x);
      const __m128i hi = _mm_cmpeq_epi32(_mm_load_si128(vv + 1), x);
      return static_cast<unsigned>(_mm_movemask_ps(_mm_castsi128_ps(lo)) |
                                   (_mm_movemask_ps(_mm_castsi128_ps(hi)) << 4));
#else
      unsigned m = 0;
      for (int i = 0; i < kSlots; ++i) m |= static_cast<unsigned>(values[i] == v) << i;
      return m;
#endif
    }
  };
  static_assert(sizeof(Bucket) == 64, "a bucket is one cache line");
  static_assert(kAbsent == -1, "an empty bucket is every byte 0xFF (rebuild)");
  static_assert(std::is_trivially_copyable_v<Bucket>);
  using Overflow = uint16_t;
  // Buckets are created unwritten (resize() default-initialises: nothing
  // for a trivial type) and filled by rebuild() with one memset.
  struct UnwrittenBuckets : std::allocator<Bucket> {
    template <class U>
    struct rebind {
      using other = UnwrittenBuckets;
    };
    UnwrittenBuckets() = default;
    void construct(Bucket* p) { ::new (static_cast<void*>(p)) Bucket; }
    template <class... Args>
    void construct(Bucket* p, Args&&... args) {
      ::new (static_cast<void*>(p)) Bucket(std::forward<Args>(args)...);
    }
  };
  using Buckets = std::vector<Bucket, UnwrittenBuckets>;

  static int first(unsigned mask) {
    return __builtin_ctz(mask);
  }
  // 32 bits of the hash; its top bits name the home bucket, so a table
  // places its entries again from their tags alone when it grows.
  static uint32_t tag_of(const BlockHash& hash) {
    return static_cast<uint32_t>(BlockHashHasher{}(hash));
  }
  size_t home_of(uint32_t tag) const {
    return static_cast<size_t>(tag >> shift_);
  }

  // Puts `value` in the first bucket with room from its home on; false
  // (nothing changed) if a count it would pass is at its maximum.
  bool place(uint32_t tag, Value value) {
    const size_t home = home_of(tag);
    size_t b = home;
    unsigned free_slots = 0;
    while ((free_slots = buckets_[b].with_value(kAbsent)) == 0) {
      if (overflow_[b] == std::numeric_limits<Overflow>::max()) return false;
      b = (b + 1) & mask_;
    }
    for (size_t k = home; k != b; k = (k + 1) & mask_) ++overflow_[k];
    const int slot = first(free_slots);
    buckets_[b].tags[slot] = tag;
    buckets_[b].values[slot] = value;
    return true;
  }

  // Doubles the buckets and places every entry again from its tag.
  void grow() {
    rebuild(buckets_.empty() ? 3 : std::countr_zero(buckets_.size()) + 1);
  }

  // Places every entry again in 2^bits buckets, or more when a count would
  // saturate.
  void rebuild(int bits) {
    Buckets old = std::move(buckets_);
    for (;; ++bits) {
      if (bits > 32) throw std::length_error("block hash table beyond 2^32 buckets");
      const size_t count = size_t{1} << bits;
      // Every byte 0xFF: every value kAbsent (tags are read only beside a
      // value). One memset, where assigning a bucket at a time was a loop
      // of 64-byte copies over a pool's 10^5 / 4 buckets.
      buckets_.clear();
      buckets_.resize(count);
      std::memset(static_cast<void*>(buckets_.data()), 0xFF, count * sizeof(Bucket));
      overflow_.assign(count, 0);
      mask_ = count - 1;
      shift_ = 32 - bits;
      bool placed_all = true;
      for (const Bucket& bucket : old) {
        for (int i = 0; i < kSlots && placed_all; ++i) {
          if (bucket.values[i] != kAbsent) placed_all = place(bucket.tags[i], bucket.values[i]);
        }
      }
      if (placed_all) return;  // else a count saturated: spread the entries further
    }
  }

  Buckets buckets_;
  std::vector<Overflow> overflow_;  // by bucket: entries stored past it from at or before it
  size_t mask_ = 0;
  int shift_ = 32;  // home_of(tag) = tag >> shift_: the top log2(buckets) bits
  size_t size_ = 0;
};

}  // namespace kvsim
