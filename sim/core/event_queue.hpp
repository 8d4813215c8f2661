#pragma once
// The event queue of the discrete-event engine (DESIGN practice 7).
//
// An event is (time, priority, insertion sequence) plus a callback. Events
// leave the queue by earliest time, then lowest priority value, then insertion
// order: ties are FIFO, never LIFO (SST and ns-3 order this way; gem5's LIFO
// ties surprise people). The order is total, so a run is reproducible bit for
// bit whatever the queue implementation. Time is integer nanoseconds.
//
// Implementations sit behind the EventQueue interface and are registered by
// name (DESIGN practice 1), so a faster queue can be swapped in and measured
// with bench/bench_event_queue.cpp.
#include <cstddef>
#include <cstdint>
#include <cstring>
#include <memory>
#include <new>
#include <string>
#include <string_view>
#include <type_traits>
#include <utility>
#include <vector>

#include "base/units.hpp"

namespace kvsim {

// A move-only `void()` callable with small-buffer storage.
//
// Why not std::function: libstdc++'s std::function stores at most 16 bytes
// inline and allocates beyond that, and it must be copyable, so it cannot hold
// a lambda that owns a unique_ptr. Captures up to kInlineBytes (enough for
// `this` plus three ids, or a whole std::function) are stored inline; larger
// ones, or ones whose move may throw, go to the heap. The common capture (a
// pointer and some integers) is trivially copyable: it has no manager, so a
// move is a fixed copy of the buffer and destruction does nothing, without
// an indirect call (bench: BM_CallbackRoundTrip).
class EventCallback {
 public:
  static constexpr std::size_t kInlineBytes = 32;

  EventCallback() noexcept = default;
  EventCallback(std::nullptr_t) noexcept {}  // NOLINT: implicit, like std::function

  template <class F, class Stored = std::decay_t<F>>
  requires(!std::is_same_v<Stored, EventCallback> && std::is_invocable_r_v<void, Stored&>)
      EventCallback(F&& callable) {  // NOLINT: implicit, so lambdas convert at call sites
    if constexpr (std::is_pointer_v<Stored>) {
      if (callable == nullptr) return;  // a null function pointer makes an empty callback
    }
    if constexpr (kStoredInline<Stored>) {
      ::new (static_cast<void*>(storage_)) Stored(std::forward<F>(callable));
      invoke_ = [](void* storage) { (*inline_object<Stored>(storage))(); };
      if constexpr (!kTriviallyRelocatable<Stored>) manage_ = &manage_inline<Stored>;
    } else {
      Stored* owned = new Stored(std::forward<F>(callable));
      std::memcpy(storage_, &owned, sizeof owned);
      invoke_ = [](void* storage) { (*heap_object<Stored>(storage))(); };
      manage_ = &manage_heap<Stored>;
    }
  }

  EventCallback(EventCallback&& other) noexcept { take_from(other); }
  EventCallback& operator=(EventCallback&& other) noexcept {
    if (this != &other) {
      reset();
      take_from(other);
    }
    return *this;
  }
  EventCallback(const EventCallback&) = delete;
  EventCallback& operator=(const EventCallback&) = delete;
  ~EventCallback() { reset(); }

  explicit operator bool() const noexcept { return invoke_ != nullptr; }

  // Pre: non-empty. Exceptions thrown by the callable propagate.
  void operator()() { invoke_(storage_); }

  // Destroys the held callable (releasing what it captured) and becomes empty.
  void reset() noexcept {
    if (manage_ != nullptr) manage_(Operation::kDestroy, storage_, nullptr);
    invoke_ = nullptr;
    manage_ = nullptr;
  }

 private:
  enum class Operation { kRelocate, kDestroy };
  using Invoke = void (*)(void* storage);
  // kRelocate: move-construct into `destination` from `source`, destroy `source`.
  // kDestroy: destroy the callable in `destination`.
  using Manage = void (*)(Operation operation, void* destination, void* source) noexcept;

  template <class Stored>
  static constexpr bool kStoredInline =
      sizeof(Stored) <= kInlineBytes &&
      alignof(Stored) <= alignof(std::max_align_t) && std::is_nothrow_move_constructible_v<Stored>;

  template <class Stored>
  static constexpr bool kTriviallyRelocatable =
      std::is_trivially_copyable_v<Stored>&& std::is_trivially_destructible_v<Stored>;

  template <class Stored>
  static Stored* inline_object(void* storage) noexcept {
    return std::launder(static_cast<Stored*>(storage));
  }
  template <class Stored>
  static Stored* heap_object(void* storage) noexcept {
    Stored* owned;
    std::memcpy(&owned, storage, sizeof owned);
    return owned;
  }

  template <class Stored>
  static void manage_inline(Operation operation, void* destination, void* source) noexcept {
    if (operation == Operation::kRelocate) {
      Stored* from = inline_object<Stored>(source);
      ::new (destination) Stored(std::move(*from));
      from->~Stored();
    } else {
      inline_object<Stored>(destination)->~Stored();
    }
  }
  template <class Stored>
  static void manage_heap(Operation operation, void* destination, void* source) noexcept {
    if (operation == Operation::kRelocate) {
      std::memcpy(destination, source, sizeof(Stored*));  // the owning pointer moves
    } else {
      delete heap_object<Stored>(destination);
    }
  }

  void take_from(EventCallback& other) noexcept {
    if (other.manage_ != nullptr) {
      other.manage_(Operation::kRelocate, storage_, other.storage_);
    } else {
      copy_words(storage_, other.storage_);
    }
    invoke_ = other.invoke_;
    manage_ = other.manage_;
    other.invoke_ = nullptr;
    other.manage_ = nullptr;
  }

  // Copies the buffer in 8-byte words. A callback is usually moved right
  // after its captures were stored (8 bytes at a time); the 16-byte loads a
  // plain memcpy compiles to would then span two stores, which the CPU cannot
  // forward, and stall ~15 cycles per push. The empty asm keeps the compiler
  // from merging the word copies back into 16-byte ones.
  static void copy_words(unsigned char* destination, const unsigned char* source) noexcept {
    static_assert(kInlineBytes % sizeof(uint64_t) == 0);
    for (std::size_t offset = 0; offset < kInlineBytes; offset += sizeof(uint64_t)) {
      uint64_t word;
      std::memcpy(&word, source + offset, sizeof word);
#if defined(__GNUC__)
      asm("" : "+r"(word));
#endif
      std::memcpy(destination + offset, &word, sizeof word);
    }
  }

  // Zero-initialised so the fixed-size copy in take_from never reads
  // indeterminate bytes.
  alignas(std::max_align_t) unsigned char storage_[kInlineBytes] = {};
  Invoke invoke_ = nullptr;
  Manage manage_ = nullptr;  // null: trivially relocatable inline callable
};
static_assert(sizeof(EventCallback) == 48);

// Names one scheduled event for cancel(). Never 0 for a real event. A handle
// stays tied to its event only: once the event has run or been cancelled, the
// handle matches nothing, even after the queue reuses the event's storage.
struct EventHandle {
  uint64_t id = 0;
  bool valid() const { return id != 0; }
  friend bool operator==(const EventHandle&, const EventHandle&) = default;
};

// An event taken off the queue, ready to run.
struct PoppedEvent {
  TimeNs time = 0;
  EventCallback callback;
};

// Contract shared by every implementation:
// - pop() returns live events in (time, priority, insertion) order;
// - cancel() is lazy: the event's callback is destroyed at once, its queue
//   entry is dropped when it would reach the front; cancelled events are
//   never returned and never counted by size()/empty();
// - cancel() of an event that already ran or was already cancelled, or of an
//   invalid handle, returns false and changes nothing.
class EventQueue {
 public:
  virtual ~EventQueue() = default;

  // Takes the callback by reference to move it once, into the queue's own
  // storage (callers pass a temporary or std::move).
  virtual EventHandle push(TimeNs time, int32_t priority, EventCallback&& callback) = 0;
  virtual bool cancel(EventHandle handle) = 0;
  virtual bool empty() const = 0;        // no live (non-cancelled) events
  virtual size_t size() const = 0;       // live events
  virtual TimeNs next_time() const = 0;  // time of the earliest live event; throws if empty
  virtual PoppedEvent pop() = 0;         // removes the earliest live event; throws if empty
  // next_time(), or `if_empty` when the queue is empty (one call instead of two).
  virtual TimeNs next_time_or(TimeNs if_empty) const { return empty() ? if_empty : next_time(); }
  // The event loop's step in one call: when a live event is due at or
  // before `until`, removes the earliest into `out` (its callback moved
  // into out.callback) and returns true; else false, nothing changed.
  virtual bool pop_due(TimeNs until, PoppedEvent& out) {
    if (empty() || next_time() > until) return false;
    out = pop();
    return true;
  }
};

// Registry by name: "binary_heap", "quaternary_heap",
// "aligned_quaternary_heap", "radix_heap". An unknown name throws
// std::invalid_argument listing the known names. The default is the radix
// heap (sim/core/event_queue_radix_heap.hpp): in bench/bench_event_queue.cpp it
// is ~15% faster than the 4-ary heap with 1,024 resident events and about
// twice as fast with 65,536 (a cluster's routers and per-client timers keep
// thousands resident), ~15% slower with 1 or 64 (a few nanoseconds). All
// pop in the same order.
std::unique_ptr<EventQueue> make_event_queue(std::string_view name = "radix_heap");
std::vector<std::string> event_queue_names();

namespace detail {
// For tests only: the named queue with its insertion counter starting at
// `first_sequence`, so the renumbering done when the 32-bit sequence runs
// out (once per 2^32 pushes) can be tested without 4 billion pushes.
std::unique_ptr<EventQueue> make_event_queue_for_testing(std::string_view name,
                                                         uint64_t first_sequence);
}  // namespace detail

}  // namespace kvsim
