#pragma once
// A vector whose first entries can leave without moving the others: the
// entries start `head()` places into the storage. The scheduler's running
// set keeps arrival order, and the oldest sequences finish first, so most
// entries leave at the front while new ones join at the back: a drop there
// moves the few entries before the last one that leaves, not the ~max_num_seqs
// after the first (Scheduler::drop_finished). The places before the head
// are not reused until rewind() moves the entries back to the start.
#include <algorithm>
#include <cstddef>
#include <vector>

namespace kvsim {

template <class T>
class FrontDropVector {
 public:
  size_t size() const { return items_.size() - head_; }
  bool empty() const { return size() == 0; }
  size_t head() const { return head_; }

  T& operator[](size_t i) { return items_[head_ + i]; }
  const T& operator[](size_t i) const { return items_[head_ + i]; }
  T* data() { return items_.data() + head_; }
  const T* data() const { return items_.data() + head_; }
  T* begin() { return data(); }
  T* end() { return items_.data() + items_.size(); }
  const T* begin() const { return data(); }
  const T* end() const { return items_.data() + items_.size(); }
  T& back() { return items_.back(); }

  void push_back(const T& value) { items_.push_back(value); }
  void pop_back() { items_.pop_back(); }
  void insert(size_t i, const T& value) {
    items_.insert(items_.begin() + static_cast<std::ptrdiff_t>(head_ + i), value);
  }
  void resize(size_t n) { items_.resize(head_ + n); }
  // Entries [from, to) move down to `dst` (dst <= from), as std::copy.
  void move_down(size_t from, size_t to, size_t dst) {
    std::copy(begin() + from, begin() + to, begin() + dst);
  }
  // Entries [from, to) move up to end before `dst_end` (dst_end >= to), as
  // std::copy_backward.
  void move_up(size_t from, size_t to, size_t dst_end) {
    std::copy_backward(begin() + from, begin() + to, begin() + dst_end);
  }
  // The first `count` entries leave (what they hold stays in the storage
  // before the head, unread).
  void drop_front(size_t count) { head_ += count; }
  // The entries move back to the start of the storage (head() == 0).
  void rewind() {
    items_.erase(items_.begin(), items_.begin() + static_cast<std::ptrdiff_t>(head_));
    head_ = 0;
  }

 private:
  std::vector<T> items_;
  size_t head_ = 0;
};

}  // namespace kvsim
