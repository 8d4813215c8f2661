#include "sim/core/simulator.hpp"

#include <fmt/format.h>

#include "base/checked_math.hpp"

#include <algorithm>
#include <stdexcept>
#include <string>
#include <utility>

namespace kvsim {

Simulator::Simulator(std::unique_ptr<EventQueue> queue) : queue_(std::move(queue)) {
  if (queue_ == nullptr) throw std::invalid_argument("Simulator: null event queue");
}

void Simulator::refuse_schedule_at(TimeNs time) const {
  if (time < now_) {
    throw std::logic_error("Simulator::schedule_at: time " + std::to_string(time) +
                           " ns is before now " + std::to_string(now_) + " ns");
  }
  throw std::logic_error("Simulator::schedule_at: empty callback");
}

EventHandle Simulator::push_now(int32_t priority, EventCallback&& callback) {
  // Entries are reused in place (their callbacks were moved out when they
  // ran), so a push is a few stores and one callback move.
  if (lane_empty()) lane_head_ = lane_end_ = 0;
  if (lane_end_ == lane_.size()) lane_.emplace_back();
  NowEvent& e = lane_[lane_end_++];
  // The count wraps after 2^32 lane and held events; a lane never holds
  // that many.
  const uint64_t id = next_id().id;
  e.priority = priority;
  e.id = id;
  e.callback = std::move(callback);
  ++lane_live_;
  // Behind every event of the same or a lower priority value (FIFO among
  // equals): usually where it is.
  size_t at = lane_end_ - 1;
  while (at > lane_head_ && lane_[at - 1].priority > priority) --at;
  if (at + 1 != lane_end_) {
    const auto begin = lane_.begin();
    std::rotate(begin + static_cast<std::ptrdiff_t>(at),
                begin + static_cast<std::ptrdiff_t>(lane_end_ - 1),
                begin + static_cast<std::ptrdiff_t>(lane_end_));
  }
  return EventHandle{id};
}

bool Simulator::cancel_now(uint64_t id) {
  for (size_t i = lane_head_; i < lane_end_; ++i) {
    NowEvent& e = lane_[i];
    if (e.id != id) continue;
    if (!e.callback) return false;  // already cancelled
    e.callback.reset();             // what it captured is released now
    --lane_live_;
    return true;
  }
  return false;  // already ran, or never was
}

void Simulator::refuse_schedule_in(TimeNs delay) const {
  if (delay < 0) {
    throw std::logic_error("Simulator::schedule_in: negative delay " + std::to_string(delay) +
                           " ns");
  }
  // A delay this long comes from the input (durations of ops on a device
  // far too slow for the work): exit 2 with the figures, not a wrapped clock.
  throw UnrepresentableQuantity(fmt::format(
      "the simulated clock would pass int64 nanoseconds ({} ns now + a delay of {} ns): the "
      "run's durations are too long to represent ({} at most)",
      now(), delay, simulated_span_text()));
}

bool Simulator::cancel(EventHandle handle) {
  if ((handle.id & kLaneIdLow) != kLaneIdLow) return queue_->cancel(handle);
  if (has_held_ && held_.id == handle.id) {
    has_held_ = false;
    held_.callback.reset();  // what it captured is released now
    return true;
  }
  if (const auto it = queued_held_.find(handle.id); it != queued_held_.end()) {
    const EventHandle queued = it->second;
    queued_held_.erase(it);
    return queue_->cancel(queued);
  }
  return cancel_now(handle.id);
}

EventHandle Simulator::push_later(TimeNs time, int32_t priority, EventCallback&& callback) {
  if (has_held_) queue_held();  // time <= held_.time: it goes first, into the queue
  if (time >= queue_->next_time_or(std::numeric_limits<TimeNs>::max()))
    return queue_->push(time, priority, std::move(callback));
  const EventHandle handle = next_id();
  held_.time = time;
  held_.priority = priority;
  held_.id = handle.id;
  held_.callback = std::move(callback);
  has_held_ = true;
  return handle;
}

void Simulator::queue_held() {
  has_held_ = false;
  // Rare (an event pushed at or before the held one): the callback is
  // wrapped so that running it forgets the handle's translation.
  const uint64_t id = held_.id;
  queued_held_[id] = queue_->push(held_.time, held_.priority,
                                  [this, id, run = std::move(held_.callback)]() mutable {
                                    queued_held_.erase(id);
                                    run();
                                  });
}

void Simulator::run(TimeNs until) {
  if (running_) throw std::logic_error("Simulator::run: called from inside a callback");
  if (until < now_) {
    throw std::logic_error("Simulator::run: until " + std::to_string(until) + " ns is before now " +
                           std::to_string(now_) + " ns");
  }
  // Cleared on exit too, so an exception from a callback leaves a usable simulator.
  struct RunningFlag {
    bool& flag;
    explicit RunningFlag(bool& f) : flag(f) { flag = true; }
    ~RunningFlag() { flag = false; }
  } running_flag(running_);

  stop_requested_ = false;
  PoppedEvent event;
  while (!stop_requested_) {
    if (!lane_empty()) {
      // The lane's events are at now_ (<= until) and before every queued one.
      EventCallback callback = std::move(lane_[lane_head_].callback);
      ++lane_head_;
      if (!callback) continue;  // cancelled
      --lane_live_;
      ++events_processed_;
      callback();
      continue;
    }
    if (has_held_) {
      // Strictly before every queued event.
      if (held_.time > until) break;
      has_held_ = false;
      now_ = held_.time;
      EventCallback callback = std::move(held_.callback);
      ++events_processed_;
      callback();
      continue;
    }
    if (!queue_->pop_due(until, event)) break;
    now_ = event.time;
    ++events_processed_;
    event.callback();
    event.callback.reset();  // what it captured is released now, as before
  }
  if (!stop_requested_ && until != std::numeric_limits<TimeNs>::max()) now_ = until;
  stop_requested_ = false;
}

}  // namespace kvsim
