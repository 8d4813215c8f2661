#pragma once
// A bounded FIFO of the keys of evicted content ("ghost" entries: s3fifo's
// G, arc's B1 and B2 hold keys, not data). add() appends, dropping the
// oldest keys beyond the capacity; take() answers whether a key is held and
// forgets it. Keys taken or added again leave a stale slot in the FIFO that
// is skipped when it reaches the front, so every call is O(1) amortised.
#include <cstdint>
#include <deque>
#include <unordered_map>

namespace kvsim {

class GhostKeys {
 public:
  void set_capacity(int64_t capacity) {
    capacity_ = capacity;
    trim();
  }
  int64_t size() const { return static_cast<int64_t>(live_.size()); }
  bool contains(uint64_t key) const { return live_.count(key) > 0; }

  void add(uint64_t key) {
    live_[key] = ++stamp_;
    fifo_.push_back({key, stamp_});
    trim();
  }
  bool take(uint64_t key) { return live_.erase(key) > 0; }
  // Drops the oldest live key; false when there is none.
  bool drop_oldest() {
    while (!fifo_.empty()) {
      const Slot s = fifo_.front();
      fifo_.pop_front();
      auto it = live_.find(s.key);
      if (it != live_.end() && it->second == s.stamp) {
        live_.erase(it);
        return true;
      }
    }
    return false;
  }

 private:
  struct Slot {
    uint64_t key;
    uint64_t stamp;
  };
  void trim() {
    while (size() > capacity_ && drop_oldest()) {
    }
    // Stale slots never outnumber live ones by much: compact when they do.
    if (fifo_.size() > 2 * live_.size() + 64) {
      std::deque<Slot> kept;
      for (const Slot& s : fifo_) {
        auto it = live_.find(s.key);
        if (it != live_.end() && it->second == s.stamp) kept.push_back(s);
      }
      fifo_.swap(kept);
    }
  }

  int64_t capacity_ = 0;
  uint64_t stamp_ = 0;
  std::unordered_map<uint64_t, uint64_t> live_;  // key -> stamp of its live slot
  std::deque<Slot> fifo_;
};

}  // namespace kvsim
