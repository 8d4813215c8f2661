#pragma once
// The simulation clock and event loop (DESIGN practice 7).
//
// The clock is integer nanoseconds and only moves forward, to the time of the
// event being run. Components schedule callbacks; the simulator runs them in
// the queue's (time, priority, insertion) order, so a run is reproducible bit
// for bit. Models never own the clock (practice 8): they return durations and
// the scheduler turns those into events here.
//
// Events for the current instant (a component scheduling "now", after the
// other events of the instant by priority: a serving engine starts its next
// step this way once a step ends) skip the queue when nothing else is queued
// for the instant: they wait in a short lane of their own, sorted by
// (priority, insertion), and run before the queue is looked at again. Every
// event the queue then holds is later, so the order is exactly the queue's
// (time, priority, insertion) order; each still counts as one event run.
//
// Likewise the earliest future event, when it is strictly earlier than
// everything queued (a lone engine's end of step, before its next arrival),
// is held in a slot of its own and run from there. While it is held the
// queue holds nothing at or before its time: a push at or before it first
// moves it into the queue (where it takes its place before the pushed
// event, as it was scheduled first), so the order is again the queue's.
#include <cstdint>
#include <limits>
#include <memory>
#include <unordered_map>
#include <vector>

#include "base/units.hpp"
#include "sim/core/event_queue.hpp"

namespace kvsim {

class Simulator {
 public:
  explicit Simulator(std::unique_ptr<EventQueue> queue = make_event_queue());

  Simulator(const Simulator&) = delete;
  Simulator& operator=(const Simulator&) = delete;

  // Current simulated time: the time of the event being run, or where the
  // last run() left the clock.
  TimeNs now() const { return now_; }

  // Schedules `callback` at absolute `time`. Throws std::logic_error when
  // time < now() (an event in the past would break causality) or when the
  // callback is empty.
  // Inline, the callback taken by reference (a lambda converts to a
  // temporary): it is moved once, into the queue or the lane.
  EventHandle schedule_at(TimeNs time, int32_t priority, EventCallback&& callback) {
    if (time < now_ || !callback) [[unlikely]]
      refuse_schedule_at(time);
    if (time == now_ && lane_takes_now()) return push_now(priority, std::move(callback));
    if (has_held_ && time > held_.time) return queue_->push(time, priority, std::move(callback));
    return push_later(time, priority, std::move(callback));
  }
  // Schedules `callback` at now() + delay. Throws std::logic_error when delay < 0
  // or now() + delay overflows.
  EventHandle schedule_in(TimeNs delay, int32_t priority, EventCallback&& callback) {
    if (delay < 0 || delay > std::numeric_limits<TimeNs>::max() - now_) [[unlikely]]
      refuse_schedule_in(delay);
    return schedule_at(now_ + delay, priority, std::move(callback));
  }

  // Cancels a pending event. False (and no effect) when it already ran, was
  // already cancelled, or the handle is invalid.
  bool cancel(EventHandle handle);

  // Runs events in order until the queue is empty, stop() is called, or the
  // next event is later than `until`. Events at exactly `until` run.
  // When it returns because nothing is left at or before a finite `until`,
  // the clock advances to `until` (as SimPy's run(until=...) does), so
  // schedule_in() afterwards counts from there; later events stay queued.
  // After stop() the clock stays at the last event run. A later run()
  // continues where this one left off. Exceptions from a callback propagate
  // (that event counts as run). Calling run() from inside a callback, or
  // with until < now(), throws std::logic_error.
  void run(TimeNs until = std::numeric_limits<TimeNs>::max());

  // Makes the current run() return once the running callback finishes.
  // Outside run() it has no effect (run() clears it when it starts).
  void stop() { stop_requested_ = true; }

  // Events whose callback has been invoked (cancelled ones are not counted).
  uint64_t events_processed() const { return events_processed_; }
  // Live events still queued.
  size_t pending_events() const { return queue_->size() + lane_live_ + (has_held_ ? 1 : 0); }
  bool running() const { return running_; }

 private:
  // An event for now_ held out of the queue (see the top of this file).
  struct NowEvent {
    int32_t priority = 0;
    uint64_t id = 0;
    EventCallback callback;  // empty once cancelled
  };
  // Lane handles keep the low 32 bits at all ones, a slot index no queue
  // hands out (sim/core/event_queue.cpp: fewer than 2^32 - 1 slots), so cancel()
  // tells them apart; the high 32 bits count lane events (starting at 1).
  static constexpr uint64_t kLaneIdLow = 0xffffffffu;
  bool lane_empty() const { return lane_head_ == lane_end_; }
  // True when an event at now_ may wait in the lane: the lane already holds
  // some (then the queue holds none at now_), or the queue holds none at now_.
  bool lane_takes_now() const {
    return !lane_empty() || queue_->next_time_or(std::numeric_limits<TimeNs>::max()) > now_;
  }
  EventHandle push_now(int32_t priority, EventCallback&& callback);
  // Throw what schedule_at (a time in the past, else an empty callback) and
  // schedule_in refuse, out of line.
  [[noreturn]] void refuse_schedule_at(TimeNs time) const;
  [[noreturn]] void refuse_schedule_in(TimeNs delay) const;
  bool cancel_now(uint64_t id);
  // A future event that is not after the held one (or with none held):
  // held when it is strictly earlier than every queued event, else queued.
  EventHandle push_later(TimeNs time, int32_t priority, EventCallback&& callback);
  // The held event goes into the queue; its handle keeps cancelling it.
  void queue_held();
  EventHandle next_id() {
    return EventHandle{(static_cast<uint64_t>(static_cast<uint32_t>(++lane_pushes_)) << 32) |
                       kLaneIdLow};
  }

  std::unique_ptr<EventQueue> queue_;
  // Sorted by (priority, insertion); lane_[lane_head_, lane_end_) are still
  // to run (the entries past lane_end_ are spare).
  std::vector<NowEvent> lane_;
  size_t lane_head_ = 0, lane_end_ = 0;
  size_t lane_live_ = 0;      // not cancelled
  uint64_t lane_pushes_ = 0;  // ids of lane and held events
  // The held future event (see the top of this file).
  struct HeldEvent {
    TimeNs time = 0;
    int32_t priority = 0;
    uint64_t id = 0;
    EventCallback callback;
  };
  bool has_held_ = false;
  HeldEvent held_;
  // Held events moved into the queue and not run yet: their handles there.
  std::unordered_map<uint64_t, EventHandle> queued_held_;
  TimeNs now_ = 0;
  uint64_t events_processed_ = 0;
  bool stop_requested_ = false;
  bool running_ = false;
};

}  // namespace kvsim
