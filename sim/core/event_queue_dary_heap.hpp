#pragma once
// A d-ary heap (d = 2 or 4) of 24-byte HeapKeys in one vector: the container
// behind the "binary_heap" and "quaternary_heap" event queues.
#include <cstddef>
#include <utility>
#include <vector>

#include "sim/core/event_queue_key.hpp"

namespace kvsim::event_queue_detail {

template <unsigned kArity>
class DaryKeyHeap {
  static_assert(kArity == 2 || kArity == 4, "earliest_child() is unrolled for 2 and 4");

 public:
  bool empty() const { return keys_.empty(); }
  size_t size() const { return keys_.size(); }
  const HeapKey& front() const { return keys_.front(); }
  const HeapKey& key_at(size_t index) const { return keys_[index]; }

  void insert(const HeapKey& key) {
    keys_.emplace_back();
    sift_up(keys_.size() - 1, 0, key);
  }

  void remove_front() {
    const HeapKey last = keys_.back();
    keys_.pop_back();
    if (!keys_.empty()) sift_down(0, last);
  }

  template <class Predicate>
  void erase_if(Predicate predicate) {
    std::erase_if(keys_, predicate);
    if (keys_.size() < 2) return;
    for (size_t i = (keys_.size() - 2) / kArity + 1; i-- > 0;) sift_down(i, keys_[i]);
  }

  void move_all_to(std::vector<HeapKey>& out) {
    out.insert(out.end(), keys_.begin(), keys_.end());
    keys_.clear();
  }
  // A sorted array is a valid heap of any arity.
  void assign_sorted(std::vector<HeapKey> sorted) { keys_ = std::move(sorted); }

 private:
  // Moves the hole up from `hole` (not above `top`) past the keys `key` runs
  // before, then stores `key` there. A hole, not swaps: one write per level.
  void sift_up(size_t hole, size_t top, HeapKey key) {
    while (hole > top) {
      const size_t parent = (hole - 1) / kArity;
      if (!runs_before(key, keys_[parent])) break;
      keys_[hole] = keys_[parent];
      hole = parent;
    }
    keys_[hole] = key;
  }

  // The earliest of the kArity children starting at `first`, chosen with
  // selects rather than branches. For 4 it is a tournament whose final
  // comparison uses the winners' orders already in registers.
  size_t earliest_child(size_t first) const {
    const HeapKey* child = keys_.data() + first;
    const Order128 order0 = order_of(child[0]);
    const Order128 order1 = order_of(child[1]);
    const bool one_first = order1 < order0;
    if constexpr (kArity == 2) {
      return first + static_cast<size_t>(one_first);
    } else {
      const Order128 order2 = order_of(child[2]);
      const Order128 order3 = order_of(child[3]);
      const bool three_first = order3 < order2;
      const Order128 winner01 = one_first ? order1 : order0;
      const Order128 winner23 = three_first ? order3 : order2;
      const size_t offset01 = static_cast<size_t>(one_first);
      const size_t offset23 = 2 + static_cast<size_t>(three_first);
      // Mask arithmetic, not `?:`: GCC turns this last select into a branch.
      const size_t take23 = size_t{0} - static_cast<size_t>(winner23 < winner01);
      return first + (offset01 ^ ((offset01 ^ offset23) & take23));
    }
  }

  // Places `key` in the subtree rooted at `hole`, bottom-up (Wegener's
  // bottom-up heapsort): walk the hole down along the earliest children to a
  // leaf without comparing against `key`, then sift `key` up from there. The
  // key being placed is usually the heap's last, hence late, so it belongs
  // near the bottom; this saves a comparison and an unpredictable branch per
  // level over the textbook sift-down.
  void sift_down(size_t hole, HeapKey key) {
    const size_t top = hole;
    const size_t count = keys_.size();
    size_t first_child = hole * kArity + 1;
    while (first_child + kArity <= count) {  // every child present
      const size_t best = earliest_child(first_child);
      keys_[hole] = keys_[best];
      hole = best;
      first_child = hole * kArity + 1;
    }
    if (first_child < count) {  // the one node with fewer than kArity children
      size_t best = first_child;
      for (size_t child = first_child + 1; child < count; ++child) {
        if (runs_before(keys_[child], keys_[best])) best = child;
      }
      keys_[hole] = keys_[best];
      hole = best;
    }
    sift_up(hole, top, key);
  }

  std::vector<HeapKey> keys_;
};

}  // namespace kvsim::event_queue_detail
