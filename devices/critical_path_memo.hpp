#pragma once
// Remembers the step graph's longest path across steps whose op durations
// differ in one kind only (a decode step whose batch keeps its size: every
// op but attention lasts as long as in the last step, attention a little
// longer as the contexts grow), so most steps are priced without walking
// the graph.
//
// Why it is exact: the longest path is the maximum, over the graph's paths,
// of the sum of their ops' durations. With every other duration fixed it is
// f(d) = max_P (a_P + n_P d) in the varying kind's duration d, where n_P is
// how many vertices of that kind path P holds (0 <= n_P <= K, K the kind's
// vertices in the graph): convex, non-decreasing, with slopes in [0, K].
// Hence, from two points d1 < d2 worked out in full:
//   - f(d2) - f(d1) == K (d2 - d1): the slope is K on [d1, d2], and being
//     non-decreasing and at most K it stays K beyond, so
//     f(d) = f(d1) + K (d - d1) for every d >= d1;
//   - f(d2) == f(d1): the slope is 0 on [d1, d2] and, non-decreasing and at
//     least 0, also 0 before, so f(d) = f(d1) for every d <= d2.
// Durations are integer nanoseconds, so both are exact, not approximations.
#include <array>
#include <bit>
#include <cstddef>
#include <cstdint>

#include "base/units.hpp"
#include "models/step_ops.hpp"

namespace kvsim {

class CriticalPathMemo {
 public:
  using Durations = std::array<TimeNs, kOpKindCount>;

  // `varying`: the kind whose duration may change between hits; `vertices`:
  // how many vertices of that kind the graph holds (K above).
  CriticalPathMemo(OpKind varying, int64_t vertices)
      : varying_(static_cast<size_t>(varying)), vertices_(vertices) {}

  // Names the entry a lookup used and its filling: while the entry is not
  // filled anew, it holds the same other durations, so a caller that knows
  // its own other durations have not changed since (a step of a remembered
  // shape) may ask remembered() without hashing and comparing them.
  struct Ticket {
    size_t slot = 0;
    uint64_t fill = 0;  // 0: no ticket
  };

  // f(duration), from memory when a known regime covers it, else
  // compute(duration) (the full longest path), which is then remembered.
  // With `ticket`, it is set to the entry used.
  template <class Compute>
  TimeNs critical_path(const Durations& duration, Compute&& compute, Ticket* ticket = nullptr) {
    const size_t slot = find_or_fill(duration);
    Entry& e = entries_[slot];
    e.last_use = ++uses_;
    const TimeNs d = duration[varying_];
    if (ticket != nullptr) *ticket = {slot, e.fill};
    const TimeNs known = from_regimes(e, d);
    if (known >= 0) return known;
    const TimeNs f = compute(duration);
    if (e.has_last && e.last_d != d) learn(e, d, f);
    e.has_last = true;
    e.last_d = d;
    e.last_f = f;
    return f;
  }

  // f at varying duration `d`, the other durations being those `ticket` was
  // issued for, when the entry is still that filling and a known regime
  // covers d (what critical_path would answer without computing); -1
  // otherwise (then ask critical_path). Learns nothing but the use.
  TimeNs remembered(const Ticket& ticket, TimeNs d) {
    Entry& e = entries_[ticket.slot];
    if (ticket.fill == 0 || e.fill != ticket.fill) return -1;
    const TimeNs f = from_regimes(e, d);
    if (f >= 0) e.last_use = ++uses_;
    return f;
  }

 private:
  struct Entry {
    uint64_t fill = 0;      // which filling of the entry (0: never used)
    uint64_t last_use = 0;  // when it last answered (the older way is replaced)
    Durations others{};     // every duration but the varying one (zeroed)
    bool has_last = false;
    TimeNs last_d = 0, last_f = 0;  // the last point worked out in full
    bool has_linear = false;        // f(d) = linear_at + K (d - linear_from), d >= linear_from
    TimeNs linear_from = 0, linear_at = 0;
    bool has_flat = false;  // f(d) = flat_at, d <= flat_to
    TimeNs flat_to = 0, flat_at = 0;
  };
  // Batches of a few sizes alternate (arrivals, completions): one entry per
  // recent shape, in a set chosen by a hash of the fixed durations. Four
  // ways per set, the one used longest ago replaced: a prefill step's
  // durations, seen once, then push out a shape unused for a while rather
  // than the decode shape in use.
  static constexpr size_t kSets = 32;
  static constexpr size_t kWays = 4;
  static_assert(std::has_single_bit(kSets), "set_of takes the hash's top bits");

  size_t set_of(const Durations& duration) const {
    // A weighted sum (independent terms, no chain of multiplies), mixed once.
    uint64_t h = 0;
    for (size_t k = 0; k < kOpKindCount; ++k)
      if (k != varying_) h += static_cast<uint64_t>(duration[k]) * (2 * k + 1);
    return static_cast<size_t>((h * 0x9E3779B97F4A7C15ULL) >> (64 - std::countr_zero(kSets)));
  }
  // The entry holding these other durations, or a fresh one in their set.
  size_t find_or_fill(const Durations& duration) {
    const size_t first = set_of(duration) * kWays;
    size_t victim = first;
    for (size_t i = first; i < first + kWays; ++i) {
      const Entry& e = entries_[i];
      if (e.fill != 0 && same_others(e.others, duration)) return i;
      if (e.last_use < entries_[victim].last_use) victim = i;
    }
    Entry& e = entries_[victim];
    e = Entry{};
    e.fill = ++fills_;
    e.others = duration;
    e.others[varying_] = 0;
    return victim;
  }
  // f(d) from the entry's regimes, -1 when none covers d (f is never
  // negative: durations are not).
  TimeNs from_regimes(const Entry& e, TimeNs d) const {
    if (e.has_linear && d >= e.linear_from) return e.linear_at + vertices_ * (d - e.linear_from);
    if (e.has_flat && d <= e.flat_to) return e.flat_at;
    return -1;
  }
  bool same_others(const Durations& others, const Durations& duration) const {
    for (size_t k = 0; k < kOpKindCount; ++k)
      if (k != varying_ && others[k] != duration[k]) return false;
    return true;
  }
  void learn(Entry& e, TimeNs d, TimeNs f) const {
    const bool below = e.last_d < d;
    const TimeNs d1 = below ? e.last_d : d, f1 = below ? e.last_f : f;
    const TimeNs d2 = below ? d : e.last_d, f2 = below ? f : e.last_f;
    if (f2 - f1 == vertices_ * (d2 - d1) && (!e.has_linear || d1 < e.linear_from)) {
      e.has_linear = true;
      e.linear_from = d1;
      e.linear_at = f1;
    }
    if (f2 == f1 && (!e.has_flat || d2 > e.flat_to)) {
      e.has_flat = true;
      e.flat_to = d2;
      e.flat_at = f2;
    }
  }

  size_t varying_;
  int64_t vertices_;
  uint64_t fills_ = 0;
  uint64_t uses_ = 0;
  std::array<Entry, kSets * kWays> entries_{};
};

}  // namespace kvsim
