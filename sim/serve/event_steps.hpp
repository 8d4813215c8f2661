#pragma once
// The step in which each running sequence next needs a look from the
// scheduler, by its place in the running set (arrival order), and the list
// of those due in a step. Every step asks which of the (up to max_num_seqs)
// entries are due, and at block_size 16 about one in eight is: the list is
// built from 32-bit copies of the steps, compared 16 at a time into a word
// of one bit per entry for 64 entries, so a step costs a fraction of a
// nanosecond per entry that is not due. The 64-bit steps stay the truth; the copies
// count from a base that moves on every 2^30 steps (kRebase), so they never
// wrap however long the run.
// The oldest sequences finish first, so entries leave mostly at the front:
// drop_front() moves no entry, it starts the places `head_` entries into
// the storage (the ones before are never due), and rewind() moves the
// entries back to the start when the caller chooses (Scheduler::drop_finished).
#include <algorithm>
#include <bit>
#include <cstdint>
#include <limits>
#include <vector>

#if defined(__SSE2__)
#include <emmintrin.h>
#endif

namespace kvsim {

class EventSteps {
 public:
  // Steps from the base after which the copies are taken again from a new
  // base (a run reaches it after 2^30 steps, if ever).
  static constexpr int64_t kRebase = int64_t{1} << 30;
  // Below this many entries the list is built one entry at a time.
  static constexpr size_t kFewEntries = 64;
  // The step of a place before the head: never due, in both copies.
  static constexpr int64_t kNever = std::numeric_limits<int64_t>::max();

  size_t size() const { return step_.size() - head_; }
  // Where the entries start in the storage (drop_front moves it on).
  size_t head() const { return head_; }
  int64_t operator[](size_t i) const { return step_[head_ + i]; }
  void set(size_t i, int64_t step) {
    const size_t at = head_ + i;  // once: the store to step_ may alias head_
    step_[at] = step;
    near_[at] = near(step);
  }
  // set() of a step after the `now` of the last list_due (so not before
  // the copies' base), as the scheduler sets an entry it looked at.
  void set_ahead(size_t i, int64_t step) {
    const size_t at = head_ + i;
    const int64_t from_base = step - base_;
    step_[at] = step;
    near_[at] =
        static_cast<int32_t>(std::min<int64_t>(from_base, std::numeric_limits<int32_t>::max()));
  }
  void insert(size_t i, int64_t step) {
    const auto at = static_cast<std::ptrdiff_t>(head_ + i);
    step_.insert(step_.begin() + at, step);
    near_.insert(near_.begin() + at, near(step));
  }
  void pop_back() {
    step_.pop_back();
    near_.pop_back();
  }
  // Entries [from, to) move down to `dst` (dst <= from), as std::copy.
  void move_down(size_t from, size_t to, size_t dst) {
    std::copy(step_.begin() + at(from), step_.begin() + at(to), step_.begin() + at(dst));
    std::copy(near_.begin() + at(from), near_.begin() + at(to), near_.begin() + at(dst));
  }
  // Entries [from, to) move up to end before `dst_end` (dst_end >= to), as
  // std::copy_backward.
  void move_up(size_t from, size_t to, size_t dst_end) {
    std::copy_backward(step_.begin() + at(from), step_.begin() + at(to),
                       step_.begin() + at(dst_end));
    std::copy_backward(near_.begin() + at(from), near_.begin() + at(to),
                       near_.begin() + at(dst_end));
  }
  // The first `count` entries leave; the others keep their steps and move
  // down by `count` places, with no entry moved in the storage.
  void drop_front(size_t count) {
    std::fill_n(step_.begin() + at(0), count, kNever);
    std::fill_n(near_.begin() + at(0), count, std::numeric_limits<int32_t>::max());
    head_ += count;
  }
  // The entries move back to the start of the storage (head() == 0).
  void rewind() {
    step_.erase(step_.begin(), step_.begin() + at(0));
    near_.erase(near_.begin(), near_.begin() + at(0));
    head_ = 0;
  }
  void resize(size_t n) {
    step_.resize(head_ + n);
    near_.resize(head_ + n);
  }

  // Writes the places of the entries whose step is <= now, in increasing
  // order, to `out` (room for size() entries); returns how many.
  size_t list_due(int64_t now, uint32_t* out) {
    if (now - base_ >= kRebase) rebase(now);
    const size_t n = size();
    if (n < kFewEntries) {
      // A small batch: one compare per entry beats setting up the words.
      const int64_t* const step = step_.data() + head_;
      size_t m = 0;
      for (size_t i = 0; i < n; ++i) {
        out[m] = static_cast<uint32_t>(i);
        m += step[i] <= now ? 1 : 0;
      }
      return m;
    }
    const auto limit = static_cast<int32_t>(now - base_);
    // The words start at a multiple of 16 places in the storage, as they
    // would with no head: up to 15 places before the head are compared too
    // (never due), and the 16-place loads stay in step with the storage.
    const size_t first = head_ & ~size_t{15};
    const size_t end = near_.size();
    const int32_t* const near_step = near_.data();
    size_t m = 0;
    // A word of 64 bits per 64 entries, one per due entry (the lowest
    // first), from the copies compared 16 at a time.
    for (size_t w = first; w < end; w += 64) {
      const size_t count = std::min<size_t>(64, end - w);
      const size_t place = w - head_;  // wraps for w < head_; the sum does not
      for (uint64_t word = due_bits(near_step + w, count, limit); word != 0; word &= word - 1)
        out[m++] = static_cast<uint32_t>(place + static_cast<size_t>(std::countr_zero(word)));
    }
    return m;
  }

 private:
  std::ptrdiff_t at(size_t i) const { return static_cast<std::ptrdiff_t>(head_ + i); }
  int32_t near(int64_t step) const {
    // Saturated: a step too far ahead stays after every `now` the copies
    // are compared with before the next rebase; one far behind stays due.
    return static_cast<int32_t>(std::clamp<int64_t>(
        step - base_, std::numeric_limits<int32_t>::min(), std::numeric_limits<int32_t>::max()));
  }
  void rebase(int64_t now) {
    base_ = now;
    // The places before the head too: kNever stays saturated.
    for (size_t i = 0; i < step_.size(); ++i) near_[i] = near(step_[i]);
  }
  // Bit j set when copies[j] <= limit, for j < count (<= 64).
  static uint64_t due_bits(const int32_t* copies, size_t count, int32_t limit) {
    uint64_t bits = 0;
    size_t j = 0;
#if defined(__SSE2__)
    // 16 compares, two narrowing packs and one byte mask a step: bit j of
    // the mask is set when copies[j] > limit (not due).
    const __m128i top = _mm_set1_epi32(limit);
    for (; j + 16 <= count; j += 16) {
      const auto* p = reinterpret_cast<const __m128i*>(copies + j);
      const __m128i a = _mm_cmpgt_epi32(_mm_loadu_si128(p), top);
      const __m128i b = _mm_cmpgt_epi32(_mm_loadu_si128(p + 1), top);
      const __m128i c = _mm_cmpgt_epi32(_mm_loadu_si128(p + 2), top);
      const __m128i d = _mm_cmpgt_epi32(_mm_loadu_si128(p + 3), top);
      const __m128i bytes = _mm_packs_epi16(_mm_packs_epi32(a, b), _mm_packs_epi32(c, d));
      const auto later = static_cast<uint32_t>(_mm_movemask_epi8(bytes));
      bits |= static_cast<uint64_t>(~later & 0xffffu) << j;
    }
#endif
    for (; j < count; ++j) bits |= static_cast<uint64_t>(copies[j] <= limit ? 1 : 0) << j;
    return bits;
  }

  // Places [0, head_) are gone (kNever); the entries are [head_, size).
  std::vector<int64_t> step_;
  std::vector<int32_t> near_;  // step_ - base_, saturated to 32 bits
  size_t head_ = 0;
  int64_t base_ = 0;
};

}  // namespace kvsim
