#pragma once
// A radix heap over event times: the container behind the "radix_heap" event
// queue (Ahuja, Mehlhorn, Orlin and Tarjan, "Faster algorithms for the
// shortest path problem", J. ACM 37(2), 1990, with one bucket per bit).
//
// A discrete-event clock never runs backwards: every event is scheduled at
// or after the time of the one being run. Keys are therefore bucketed by the
// highest bit in which their time differs from `base_`, the time of the
// earliest event: bucket b > 0 holds times whose highest differing bit is
// b - 1, bucket 0 the times equal to base_ (a small 4-ary heap ordered by
// the whole key: priority, then insertion). Push is a bit scan and an
// append; when bucket 0 empties, the lowest non-empty bucket is scanned
// for its earliest time, which becomes base_, and its keys move to lower
// buckets. A key moves at most once per bit, down, over arrays read in
// order: no chain of dependent cache misses as in a deep heap.
//
// base_ is the earliest time in the buckets, not the clock: once the last
// event of an instant is popped it moves to the next queued time, and an
// event may then be scheduled between the clock and base_ (a step's end
// sooner than the next arrival). Such keys wait in `early_`, a plain 4-ary
// heap, and front() takes the earlier of its front and bucket 0's.
#include <bit>
#include <cstddef>
#include <cstdint>
#include <utility>
#include <vector>

#include "sim/core/event_queue_dary_heap.hpp"
#include "sim/core/event_queue_key.hpp"

namespace kvsim::event_queue_detail {

class RadixKeyHeap {
 public:
  bool empty() const { return size_ == 0; }
  size_t size() const { return size_; }
  const HeapKey& front() const { return early_first() ? early_.front() : now_.front(); }
  // The slots the queue prefetches callbacks of: the keys due at base_ come
  // next (events at one instant are common when thousands are resident);
  // past those, the front again (harmless).
  uint32_t slot_at(size_t index) const {
    return index < now_.size() ? now_.key_at(index).slot : front().slot;
  }

  void insert(const HeapKey& key) {
    if (in_buckets_ == 0) {
      base_ = key.order_high;
    } else if (key.order_high < base_) [[unlikely]] {
      early_.insert(key);
      ++size_;
      return;
    }
    place(key);
    ++in_buckets_;
    ++size_;
  }

  void remove_front() {
    --size_;
    if (early_first()) {
      early_.remove_front();
      return;
    }
    now_.remove_front();
    --in_buckets_;
    if (now_.empty() && in_buckets_ != 0) refill();
  }

  template <class Predicate>
  void erase_if(Predicate predicate) {
    std::vector<HeapKey> all;
    move_all_to(all);
    std::erase_if(all, predicate);
    reinsert(std::move(all));
  }

  void move_all_to(std::vector<HeapKey>& out) {
    early_.move_all_to(out);
    now_.move_all_to(out);
    for (std::vector<HeapKey>& bucket : buckets_) {
      out.insert(out.end(), bucket.begin(), bucket.end());
      bucket.clear();
    }
    occupied_ = 0;
    size_ = 0;
    in_buckets_ = 0;
  }
  void assign_sorted(std::vector<HeapKey> sorted) { reinsert(std::move(sorted)); }

 private:
  static constexpr size_t kBuckets = 64;  // buckets_[b - 1] is bucket b (1..64)

  bool early_first() const {
    return !early_.empty() && (now_.empty() || runs_before(early_.front(), now_.front()));
  }

  // Bucket 0 (now_) when the time equals base_, else the highest differing bit.
  void place(const HeapKey& key) {
    const uint64_t differ = key.order_high ^ base_;
    if (differ == 0) {
      now_.insert(key);
      return;
    }
    const auto b = static_cast<size_t>(63 - std::countl_zero(differ));  // bucket b + 1
    buckets_[b].push_back(key);
    occupied_ |= uint64_t{1} << b;
  }

  // Bucket 0 is empty and keys remain: the earliest time is in the lowest
  // occupied bucket; it becomes base_ and that bucket's keys move down.
  void refill() {
    const auto b = static_cast<size_t>(std::countr_zero(occupied_));
    std::vector<HeapKey>& bucket = buckets_[b];
    uint64_t earliest = bucket.front().order_high;
    for (const HeapKey& key : bucket)
      earliest = key.order_high < earliest ? key.order_high : earliest;
    base_ = earliest;
    occupied_ &= ~(uint64_t{1} << b);
    // Every key of the bucket now differs from base_ below bit b: it lands in
    // now_ or in a lower bucket, never back in this one.
    for (const HeapKey& key : bucket) place(key);
    bucket.clear();
  }

  void reinsert(std::vector<HeapKey> keys) {
    size_ = 0;
    in_buckets_ = 0;
    occupied_ = 0;
    if (keys.empty()) return;
    uint64_t earliest = keys.front().order_high;
    for (const HeapKey& key : keys)
      earliest = key.order_high < earliest ? key.order_high : earliest;
    base_ = earliest;
    for (const HeapKey& key : keys) place(key);
    size_ = in_buckets_ = keys.size();
  }

  DaryKeyHeap<4> now_;    // bucket 0: keys at base_, by (priority, insertion)
  DaryKeyHeap<4> early_;  // keys pushed earlier than base_
  std::vector<HeapKey> buckets_[kBuckets];
  uint64_t occupied_ = 0;  // bit b: buckets_[b] is non-empty
  uint64_t base_ = 0;      // order_high (biased time) of the earliest key
  size_t size_ = 0;        // keys in early_ and the buckets
  size_t in_buckets_ = 0;  // keys in now_ and buckets_
};

}  // namespace kvsim::event_queue_detail
