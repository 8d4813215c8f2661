#pragma once
// The step in which each running sequence next needs a look from the
// scheduler, by its place in the running set (arrival order), and the list
// of those due in a step. Every step asks which of the (up to max_num_seqs)
// entries are due, and at block_size 16 about one in eight is: the list is
// built from 32-bit copies of the steps, compared several at a time, and a
// word of flags per 8 entries, so a step costs a fraction of a nanosecond
// per entry that is not due. The 64-bit steps stay the truth; the copies
// count from a base that moves on every 2^30 steps (kRebase), so they never
// wrap however long the run.
#include <algorithm>
#include <bit>
#include <cstdint>
#include <cstring>
#include <limits>
#include <vector>

namespace kvsim {

class EventSteps {
 public:
  // Steps from the base after which the copies are taken again from a new
  // base (a run reaches it after 2^30 steps, if ever).
  static constexpr int64_t kRebase = int64_t{1} << 30;
  // Below this many entries the list is built one entry at a time.
  static constexpr size_t kFewEntries = 64;

  size_t size() const { return step_.size(); }
  int64_t operator[](size_t i) const { return step_[i]; }
  void set(size_t i, int64_t step) {
    step_[i] = step;
    near_[i] = near(step);
  }
  void insert(size_t i, int64_t step) {
    step_.insert(step_.begin() + static_cast<std::ptrdiff_t>(i), step);
    near_.insert(near_.begin() + static_cast<std::ptrdiff_t>(i), near(step));
  }
  void pop_back() {
    step_.pop_back();
    near_.pop_back();
  }
  // Entries [from, to) move down to `dst` (dst <= from), as std::copy.
  void move_down(size_t from, size_t to, size_t dst) {
    std::copy(step_.begin() + static_cast<std::ptrdiff_t>(from),
              step_.begin() + static_cast<std::ptrdiff_t>(to),
              step_.begin() + static_cast<std::ptrdiff_t>(dst));
    std::copy(near_.begin() + static_cast<std::ptrdiff_t>(from),
              near_.begin() + static_cast<std::ptrdiff_t>(to),
              near_.begin() + static_cast<std::ptrdiff_t>(dst));
  }
  void resize(size_t n) {
    step_.resize(n);
    near_.resize(n);
  }

  // Writes the places of the entries whose step is <= now, in increasing
  // order, to `out` (room for size() entries); returns how many.
  size_t list_due(int64_t now, uint32_t* out) {
    if (now - base_ >= kRebase) rebase(now);
    const size_t n = step_.size();
    if (n < kFewEntries) {
      // A small batch: one compare per entry beats setting up the flags.
      size_t m = 0;
      for (size_t i = 0; i < n; ++i) {
        out[m] = static_cast<uint32_t>(i);
        m += step_[i] <= now ? 1 : 0;
      }
      return m;
    }
    const size_t words = (n + 7) / 8;
    flags_.resize(words * 8);
    const auto limit = static_cast<int32_t>(now - base_);
    const int32_t* const near_step = near_.data();
    uint8_t* const flag = flags_.data();
    // A loop the compiler does 4 or 8 entries at a time.
    for (size_t i = 0; i < n; ++i) flag[i] = near_step[i] <= limit ? 1 : 0;
    std::fill(flags_.begin() + static_cast<std::ptrdiff_t>(n), flags_.end(), uint8_t{0});
    size_t m = 0;
    for (size_t w = 0; w < words; ++w) {
      uint64_t word = 0;
      std::memcpy(&word, flag + w * 8, 8);
      if constexpr (std::endian::native != std::endian::little) word = byteswap(word);
      // One bit per due entry, the lowest first (little-endian bytes).
      for (; word != 0; word &= word - 1)
        out[m++] = static_cast<uint32_t>(w * 8 + static_cast<size_t>(std::countr_zero(word)) / 8);
    }
    return m;
  }

 private:
  int32_t near(int64_t step) const {
    // Saturated: a step too far ahead stays after every `now` the copies
    // are compared with before the next rebase; one far behind stays due.
    return static_cast<int32_t>(std::clamp<int64_t>(
        step - base_, std::numeric_limits<int32_t>::min(), std::numeric_limits<int32_t>::max()));
  }
  void rebase(int64_t now) {
    base_ = now;
    for (size_t i = 0; i < step_.size(); ++i) near_[i] = near(step_[i]);
  }
  static uint64_t byteswap(uint64_t v) {
    uint64_t r = 0;
    for (int b = 0; b < 8; ++b) r |= ((v >> (8 * b)) & 0xff) << (8 * (7 - b));
    return r;
  }

  std::vector<int64_t> step_;
  std::vector<int32_t> near_;  // step_ - base_, saturated to 32 bits
  std::vector<uint8_t> flags_;
  int64_t base_ = 0;
};

}  // namespace kvsim
