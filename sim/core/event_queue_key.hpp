#pragma once
// The sort key every event queue container orders by (sim/core/event_queue.cpp).
// Internal to the queue implementations; not part of the EventQueue interface.
#include <cstdint>

#include "base/units.hpp"

namespace kvsim::event_queue_detail {

__extension__ typedef unsigned __int128 Order128;  // __extension__: GCC/Clang builtin

// The whole (time, priority, sequence) order is one unsigned 128-bit number,
// so comparing two keys is a compare-and-borrow with no branch to mispredict
// (in a large heap each comparison is a coin toss):
//   order_high: time with its sign bit flipped (signed order -> unsigned order)
//   order_low:  priority with its sign bit flipped (high 32 bits),
//               insertion sequence (low 32 bits)
// The 32-bit sequence is renumbered before it can wrap (see push()). The
// sequence is unique, so the order is total: pop order never depends on a
// container's internal shape, which is what makes compaction and
// renumbering safe and all queues interchangeable bit for bit.
struct HeapKey {
  uint64_t order_low;
  uint64_t order_high;
  uint32_t slot;
};
static_assert(sizeof(HeapKey) == 24, "keys should stay small: containers move them");

constexpr uint64_t kSignBit = uint64_t{1} << 63;
constexpr uint64_t kSequenceMask = 0xffffffffu;

inline Order128 order_of(const HeapKey& key) {
  return (static_cast<Order128>(key.order_high) << 64) | key.order_low;
}
inline bool runs_before(const HeapKey& a, const HeapKey& b) {
  return order_of(a) < order_of(b);
}
inline TimeNs time_of(const HeapKey& key) {
  return static_cast<TimeNs>(key.order_high ^ kSignBit);
}
inline HeapKey make_key(TimeNs time, int32_t priority, uint64_t sequence, uint32_t slot) {
  const uint64_t biased_priority = static_cast<uint32_t>(priority) ^ 0x80000000u;
  return HeapKey{(biased_priority << 32) | sequence, static_cast<uint64_t>(time) ^ kSignBit, slot};
}

}  // namespace kvsim::event_queue_detail
