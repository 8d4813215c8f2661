#pragma once
// The simulation clock and event loop (DESIGN practice 7).
//
// The clock is integer nanoseconds and only moves forward, to the time of the
// event being run. Components schedule callbacks; the simulator runs them in
// the queue's (time, priority, insertion) order, so a run is reproducible bit
// for bit. Models never own the clock (practice 8): they return durations and
// the scheduler turns those into events here.
#include <cstdint>
#include <limits>
#include <memory>

#include "base/units.hpp"
#include "sim/event_queue.hpp"

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
  EventHandle schedule_at(TimeNs time, int32_t priority, EventCallback callback);
  // Schedules `callback` at now() + delay. Throws std::logic_error when delay < 0
  // or now() + delay overflows.
  EventHandle schedule_in(TimeNs delay, int32_t priority, EventCallback callback);

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
  size_t pending_events() const { return queue_->size(); }
  bool running() const { return running_; }

 private:
  std::unique_ptr<EventQueue> queue_;
  TimeNs now_ = 0;
  uint64_t events_processed_ = 0;
  bool stop_requested_ = false;
  bool running_ = false;
};

}  // namespace kvsim
