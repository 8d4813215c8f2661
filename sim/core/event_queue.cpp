// Event queues and their registry.
//
// Each queue is one slot pool (SlotPoolEventQueue) over an ordered container
// of small POD keys: a 128-bit order plus a slot index, 24 bytes, so the
// container moves keys, never callables. Callbacks live out of line in the
// slot pool with a free list; a slot's generation counter makes stale
// handles harmless after the slot is reused. The containers are a binary and
// a 4-ary heap; bench/bench_event_queue.cpp measures both.
#include <algorithm>
#include <limits>
#include <stdexcept>

#include "sim/core/event_queue.hpp"
#include "sim/core/event_queue_aligned_heap.hpp"
#include "sim/core/event_queue_dary_heap.hpp"
#include "sim/core/event_queue_key.hpp"
#include "sim/core/event_queue_radix_heap.hpp"

namespace kvsim {
namespace {

using namespace event_queue_detail;  // NOLINT: the keys and containers of this file

// ---- the queue: slot pool + key container ------------------------------------

enum class SlotState : uint8_t { kFree, kPending, kCancelled };

// Handle id = generation (high 32 bits) | slot index (low 32 bits).
inline uint64_t handle_id(uint32_t generation, uint32_t slot_index) {
  return (static_cast<uint64_t>(generation) << 32) | slot_index;
}

template <class KeyContainer>
class SlotPoolEventQueue final : public EventQueue {
 public:
  explicit SlotPoolEventQueue(uint64_t first_sequence = 0) : next_sequence_(first_sequence) {}

  EventHandle push(TimeNs time, int32_t priority, EventCallback&& callback) override {
    if (next_sequence_ > kSequenceMask) [[unlikely]] {
      renumber_sequences();
    }
    const uint32_t slot_index = acquire_slot();
    callbacks_[slot_index] = std::move(callback);
    states_[slot_index] = SlotState::kPending;
    keys_.insert(make_key(time, priority, next_sequence_++, slot_index));
    ++live_;
    return EventHandle{handle_id(generations_[slot_index], slot_index)};
  }

  bool cancel(EventHandle handle) override {
    const uint32_t slot_index = static_cast<uint32_t>(handle.id & 0xffffffffu);
    const uint32_t generation = static_cast<uint32_t>(handle.id >> 32);
    if (!handle.valid() || slot_index >= states_.size()) return false;
    if (generations_[slot_index] != generation || states_[slot_index] != SlotState::kPending) {
      return false;
    }
    states_[slot_index] = SlotState::kCancelled;
    callbacks_[slot_index].reset();  // release captured resources now, not when the key surfaces
    --live_;
    ++cancelled_keys_;
    drop_cancelled_front();
    compact_if_mostly_cancelled();
    return true;
  }

  bool empty() const override { return live_ == 0; }
  size_t size() const override { return live_; }

  // Invariant kept by push/pop/cancel: the front key is live, so this is O(1)
  // and const without mutable state.
  TimeNs next_time() const override {
    if (live_ == 0) throw std::logic_error("EventQueue::next_time() on an empty queue");
    return time_of(keys_.front());
  }

  TimeNs next_time_or(TimeNs if_empty) const override {
    return live_ == 0 ? if_empty : time_of(keys_.front());
  }

  PoppedEvent pop() override {
    if (live_ == 0) throw std::logic_error("EventQueue::pop() on an empty queue");
    // Read in place, field by field: the front key may have just been written
    // by push() in 8-byte pieces, and copying it whole (16-byte loads) would
    // stall on store forwarding.
    const HeapKey& front = keys_.front();
    const uint32_t slot_index = front.slot;
    PoppedEvent event{time_of(front), std::move(callbacks_[slot_index])};
    release_slot(slot_index);
    keys_.remove_front();
    --live_;
    drop_cancelled_front();
    return event;
  }

  // empty(), next_time() and pop() in one call, the front read once.
  bool pop_due(TimeNs until, PoppedEvent& out) override {
    if (live_ == 0) return false;
    const HeapKey& front = keys_.front();
    const TimeNs time = time_of(front);
    if (time > until) return false;
    const uint32_t slot_index = front.slot;
    out.time = time;
    out.callback = std::move(callbacks_[slot_index]);
    release_slot(slot_index);
    keys_.remove_front();
    --live_;
    drop_cancelled_front();
    return true;
  }

 private:
  uint32_t acquire_slot() {
    if (!free_slots_.empty()) {
      const uint32_t slot_index = free_slots_.back();
      free_slots_.pop_back();
      return slot_index;
    }
    if (states_.size() >= kSequenceMask) {
      throw std::length_error("EventQueue: more than 2^32-1 pending events");
    }
    callbacks_.emplace_back();
    generations_.push_back(1);  // starts at 1 so that no handle id is 0
    states_.push_back(SlotState::kFree);
    return static_cast<uint32_t>(states_.size() - 1);
  }

  // A slot whose generation is exhausted is retired rather than reused, so a
  // generation never wraps and an old handle can never match a new event.
  // (That costs one slot per 4 billion reuses of it.) Freed slots are reused
  // last-in first-out, so push() usually writes a slot that is still cached.
  void release_slot(uint32_t slot_index) {
    callbacks_[slot_index].reset();
    states_[slot_index] = SlotState::kFree;
    if (generations_[slot_index] == std::numeric_limits<uint32_t>::max()) return;
    ++generations_[slot_index];
    free_slots_.push_back(slot_index);
  }

  // Restores the invariant that the front key is live. The state bytes are
  // kept apart from the callbacks so this check stays in cache even when the
  // queue is large; the new front's callback is prefetched, since the next
  // pop() will move it and at large sizes it is a cache miss.
  void drop_cancelled_front() {
    while (!keys_.empty()) {
      const uint32_t slot_index = keys_.front().slot;
      if (states_[slot_index] != SlotState::kCancelled) {
#if defined(__GNUC__)
        // A small queue's callbacks stay in cache: no prefetch to pay for.
        if (keys_.size() < kPrefetchFrom) return;
        __builtin_prefetch(&callbacks_[slot_index]);
        if constexpr (requires { keys_.slot_at(size_t{0}); }) {
          // The next front after this one is one of the front's children
          // unless a push comes between: start fetching their callbacks now,
          // one whole pop ahead.
          const size_t last = std::min<size_t>(keys_.size(), 5);
          for (size_t child = 1; child < last; ++child) {
            __builtin_prefetch(&callbacks_[keys_.slot_at(child)]);
          }
        }
#endif
        return;
      }
      release_slot(slot_index);
      keys_.remove_front();
      --cancelled_keys_;
    }
  }

  // Lazy deletion leaves cancelled keys inside the container (a time-out
  // cancelled long before it is due, say). When they outnumber live keys,
  // drop them all so memory tracks live events, in O(n) amortised over the
  // cancels that made the garbage.
  void compact_if_mostly_cancelled() {
    if (cancelled_keys_ < 1024 || cancelled_keys_ <= live_) return;
    keys_.erase_if([this](const HeapKey& key) {
      if (states_[key.slot] != SlotState::kCancelled) return false;
      release_slot(key.slot);
      return true;
    });
    cancelled_keys_ = 0;
  }

  // Once per 2^32 pushes: give the queued keys sequences 0..n-1 in their
  // current order, so FIFO among equal (time, priority) survives the 32-bit
  // counter.
  void renumber_sequences() {
    std::vector<HeapKey> all;
    keys_.move_all_to(all);
    std::sort(all.begin(), all.end(), runs_before);
    for (size_t i = 0; i < all.size(); ++i) {
      all[i].order_low = (all[i].order_low & ~kSequenceMask) | i;
    }
    next_sequence_ = all.size();
    keys_.assign_sorted(std::move(all));
  }

  // From this many queued keys on, pops prefetch the next callbacks (below
  // it they are 48 bytes each in a few kilobytes, in L1).
  static constexpr size_t kPrefetchFrom = 64;
  KeyContainer keys_;
  // The slot pool, one entry per slot index, structure of arrays.
  std::vector<EventCallback> callbacks_;
  std::vector<uint32_t> generations_;
  std::vector<SlotState> states_;
  std::vector<uint32_t> free_slots_;
  uint64_t next_sequence_;
  size_t live_ = 0;
  size_t cancelled_keys_ = 0;
};

// ---- registry -----------------------------------------------------------------

struct QueueFactory {
  std::string_view name;
  std::unique_ptr<EventQueue> (*make)(uint64_t first_sequence);
};

template <class KeyContainer>
std::unique_ptr<EventQueue> make_slot_pool_queue(uint64_t first_sequence) {
  return std::make_unique<SlotPoolEventQueue<KeyContainer>>(first_sequence);
}

// Every queue kvsim knows. tests/test_event_queue.cpp compares this list with
// the expected names so a registration cannot be lost silently.
constexpr QueueFactory kQueueFactories[] = {
    {"binary_heap", make_slot_pool_queue<DaryKeyHeap<2>>},
    {"quaternary_heap", make_slot_pool_queue<DaryKeyHeap<4>>},
    {"aligned_quaternary_heap", make_slot_pool_queue<AlignedQuaternaryKeyHeap>},
    {"radix_heap", make_slot_pool_queue<RadixKeyHeap>},
};

const QueueFactory& find_factory(std::string_view name) {
  for (const QueueFactory& factory : kQueueFactories) {
    if (factory.name == name) return factory;
  }
  std::string known;
  for (const QueueFactory& factory : kQueueFactories) {
    if (!known.empty()) known += ", ";
    known += factory.name;
  }
  throw std::invalid_argument("unknown event queue '" + std::string(name) + "' (known: " + known +
                              ")");
}

}  // namespace

std::unique_ptr<EventQueue> make_event_queue(std::string_view name) {
  return find_factory(name).make(0);
}

std::vector<std::string> event_queue_names() {
  std::vector<std::string> names;
  for (const QueueFactory& factory : kQueueFactories) names.emplace_back(factory.name);
  return names;
}

namespace detail {
std::unique_ptr<EventQueue> make_event_queue_for_testing(std::string_view name,
                                                         uint64_t first_sequence) {
  return find_factory(name).make(first_sequence);
}
}  // namespace detail

}  // namespace kvsim
