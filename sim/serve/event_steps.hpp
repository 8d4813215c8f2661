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
      // A small batch: one compare per entry beats setting up the words.
      size_t m = 0;
      for (size_t i = 0; i < n; ++i) {
        out[m] = static_cast<uint32_t>(i);
        m += step_[i] <= now ? 1 : 0;
      }
      return m;
    }
    const auto limit = static_cast<int32_t>(now - base_);
    const int32_t* const near_step = near_.data();
    size_t m = 0;
    // A word of 64 bits per 64 entries, one per due entry (the lowest
    // first), from the copies compared 16 at a time.
    for (size_t w = 0; w < n; w += 64) {
      const size_t count = std::min<size_t>(64, n - w);
      for (uint64_t word = due_bits(near_step + w, count, limit); word != 0; word &= word - 1)
        out[m++] = static_cast<uint32_t>(w + static_cast<size_t>(std::countr_zero(word)));
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

  std::vector<int64_t> step_;
  std::vector<int32_t> near_;  // step_ - base_, saturated to 32 bits
  int64_t base_ = 0;
};

}  // namespace kvsim
