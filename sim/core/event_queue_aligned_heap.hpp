#pragma once
// A 4-ary heap laid out for the cache: the container behind the
// "aligned_quaternary_heap" event queue.
//
// Same order and same bottom-up sift as the plain 4-ary heap
// (event_queue_dary_heap.hpp); what differs is the memory layout:
// - the 128-bit orders (16 bytes) and the slot indices (4 bytes) live in two
//   parallel arrays, so comparing the four children reads 64 bytes, not 96;
// - the order array is placed so that every group of four siblings
//   (indices 4i+1 .. 4i+4) fills exactly one 64-byte cache line;
// - while one level is compared, the lines of the next level below the four
//   children are prefetched, so a deep pop overlaps its cache misses instead
//   of waiting for one per level.
// With thousands of resident events the sift-down is a chain of dependent
// loads; these three changes shorten it (bench/bench_event_queue.cpp).
#include <algorithm>
#include <cstddef>
#include <cstdint>
#include <memory>
#include <new>
#include <utility>
#include <vector>

#include "sim/core/event_queue_key.hpp"

namespace kvsim::event_queue_detail {

class AlignedQuaternaryKeyHeap {
 public:
  AlignedQuaternaryKeyHeap() = default;
  AlignedQuaternaryKeyHeap(const AlignedQuaternaryKeyHeap&) = delete;
  AlignedQuaternaryKeyHeap& operator=(const AlignedQuaternaryKeyHeap&) = delete;

  bool empty() const { return size_ == 0; }
  size_t size() const { return size_; }
  HeapKey front() const { return key_at(0); }
  uint32_t slot_at(size_t index) const { return slots_[index]; }

  void insert(const HeapKey& key) {
    if (size_ == capacity_) grow();
    ++size_;
    sift_up(size_ - 1, 0, key);
  }

  void remove_front() {
    const HeapKey last = key_at(size_ - 1);
    --size_;
    if (size_ != 0) sift_down(0, last);
  }

  template <class Predicate>
  void erase_if(Predicate predicate) {
    size_t kept = 0;
    for (size_t i = 0; i < size_; ++i) {
      const HeapKey key = key_at(i);
      if (!predicate(key)) store(kept++, key);
    }
    size_ = kept;
    if (size_ < 2) return;
    for (size_t i = (size_ - 2) / kArity + 1; i-- > 0;) sift_down(i, key_at(i));
  }

  void move_all_to(std::vector<HeapKey>& out) {
    for (size_t i = 0; i < size_; ++i) out.push_back(key_at(i));
    size_ = 0;
  }
  // A sorted array is a valid heap of any arity.
  void assign_sorted(const std::vector<HeapKey>& sorted) {
    size_ = 0;
    reserve(sorted.size());
    for (const HeapKey& key : sorted) store(size_++, key);
  }

 private:
  struct PackedOrder {
    uint64_t order_low;
    uint64_t order_high;
  };
  static constexpr size_t kArity = 4;
  static constexpr size_t kLineBytes = 64;
  static_assert(sizeof(PackedOrder) * kArity == kLineBytes);
  // Index 0 sits 48 bytes into a line, so index 4i+1 starts a line.
  static constexpr size_t kLeadBytes = kLineBytes - sizeof(PackedOrder);

  struct AlignedFree {
    void operator()(unsigned char* block) const {
      ::operator delete[](block, std::align_val_t{kLineBytes});
    }
  };

  HeapKey key_at(size_t index) const {
    return HeapKey{orders_[index].order_low, orders_[index].order_high, slots_[index]};
  }
  void store(size_t index, const HeapKey& key) {
    orders_[index] = PackedOrder{key.order_low, key.order_high};
    slots_[index] = key.slot;
  }
  void move_entry(size_t to, size_t from) {
    orders_[to] = orders_[from];
    slots_[to] = slots_[from];
  }
  static Order128 order_at(const PackedOrder& order) {
    return (static_cast<Order128>(order.order_high) << 64) | order.order_low;
  }

  void reserve(size_t wanted) {
    if (wanted <= capacity_) return;
    // One spare group of four past the end, so prefetches stay inside the
    // block (prefetching outside it is harmless, but this keeps tools quiet).
    const size_t capacity = std::max<size_t>({wanted, 2 * capacity_, 64});
    const size_t bytes = kLeadBytes + (capacity + kArity) * sizeof(PackedOrder);
    std::unique_ptr<unsigned char[], AlignedFree> block(
        static_cast<unsigned char*>(::operator new[](bytes, std::align_val_t{kLineBytes})));
    auto* orders = reinterpret_cast<PackedOrder*>(block.get() + kLeadBytes);
    std::copy(orders_, orders_ + size_, orders);
    block_ = std::move(block);
    orders_ = orders;
    slots_.resize(capacity + kArity);
    capacity_ = capacity;
  }
  void grow() { reserve(capacity_ + 1); }

  // Moves the hole up from `hole` (not above `top`) past the keys `key` runs
  // before, then stores `key` there. One write per level.
  void sift_up(size_t hole, size_t top, const HeapKey& key) {
    const Order128 order = (static_cast<Order128>(key.order_high) << 64) | key.order_low;
    while (hole > top) {
      const size_t parent = (hole - 1) / kArity;
      if (!(order < order_at(orders_[parent]))) break;
      move_entry(hole, parent);
      hole = parent;
    }
    store(hole, key);
  }

  // The earliest of the four children at `first` (one cache line), chosen by
  // a tournament of selects, as in DaryKeyHeap<4>.
  size_t earliest_child(size_t first) const {
    const PackedOrder* child = orders_ + first;
    const Order128 order0 = order_at(child[0]);
    const Order128 order1 = order_at(child[1]);
    const Order128 order2 = order_at(child[2]);
    const Order128 order3 = order_at(child[3]);
    const bool one_first = order1 < order0;
    const bool three_first = order3 < order2;
    const Order128 winner01 = one_first ? order1 : order0;
    const Order128 winner23 = three_first ? order3 : order2;
    const size_t offset01 = static_cast<size_t>(one_first);
    const size_t offset23 = 2 + static_cast<size_t>(three_first);
    // Mask arithmetic, not `?:`: GCC turns this last select into a branch.
    const size_t take23 = size_t{0} - static_cast<size_t>(winner23 < winner01);
    return first + (offset01 ^ ((offset01 ^ offset23) & take23));
  }

  // Prefetches the four groups of grandchildren below the children at
  // `first_child` (whichever child wins, its children are one of these
  // lines) and their slot indices (64 bytes, at most two lines).
  void prefetch_below(size_t first_child) const {
#if defined(__GNUC__)
    const size_t first_grandchild = first_child * kArity + 1;
    if (first_grandchild >= size_) return;
    const PackedOrder* grandchildren = orders_ + first_grandchild;
    __builtin_prefetch(grandchildren);
    __builtin_prefetch(grandchildren + kArity);
    __builtin_prefetch(grandchildren + 2 * kArity);
    __builtin_prefetch(grandchildren + 3 * kArity);
    __builtin_prefetch(slots_.data() + first_grandchild);
    __builtin_prefetch(slots_.data() + first_grandchild + kArity * kArity - 1);
#else
    (void)first_child;
#endif
  }

  // Bottom-up sift (Wegener): walk the hole down along the earliest children
  // to a leaf, then sift `key` up from there.
  void sift_down(size_t hole, const HeapKey& key) {
    const size_t top = hole;
    size_t first_child = hole * kArity + 1;
    while (first_child + kArity <= size_) {  // every child present
      prefetch_below(first_child);
      const size_t best = earliest_child(first_child);
      move_entry(hole, best);
      hole = best;
      first_child = hole * kArity + 1;
    }
    if (first_child < size_) {  // the one node with fewer than four children
      size_t best = first_child;
      for (size_t child = first_child + 1; child < size_; ++child) {
        if (order_at(orders_[child]) < order_at(orders_[best])) best = child;
      }
      move_entry(hole, best);
      hole = best;
    }
    sift_up(hole, top, key);
  }

  std::unique_ptr<unsigned char[], AlignedFree> block_;
  PackedOrder* orders_ = nullptr;
  std::vector<uint32_t> slots_;
  size_t size_ = 0;
  size_t capacity_ = 0;
};

}  // namespace kvsim::event_queue_detail
