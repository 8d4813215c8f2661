#include "sim/simulator.hpp"

#include <stdexcept>
#include <string>
#include <utility>

namespace kvsim {

Simulator::Simulator(std::unique_ptr<EventQueue> queue) : queue_(std::move(queue)) {
  if (queue_ == nullptr) throw std::invalid_argument("Simulator: null event queue");
}

EventHandle Simulator::schedule_at(TimeNs time, int32_t priority, EventCallback callback) {
  if (time < now_) {
    throw std::logic_error("Simulator::schedule_at: time " + std::to_string(time) +
                           " ns is before now " + std::to_string(now_) + " ns");
  }
  if (!callback) throw std::logic_error("Simulator::schedule_at: empty callback");
  return queue_->push(time, priority, std::move(callback));
}

EventHandle Simulator::schedule_in(TimeNs delay, int32_t priority, EventCallback callback) {
  if (delay < 0) {
    throw std::logic_error("Simulator::schedule_in: negative delay " + std::to_string(delay) +
                           " ns");
  }
  if (delay > std::numeric_limits<TimeNs>::max() - now_) {
    throw std::logic_error("Simulator::schedule_in: now + delay overflows the clock");
  }
  return schedule_at(now_ + delay, priority, std::move(callback));
}

bool Simulator::cancel(EventHandle handle) {
  return queue_->cancel(handle);
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
  while (!stop_requested_ && queue_->pop_due(until, event)) {
    now_ = event.time;
    ++events_processed_;
    event.callback();
    event.callback.reset();  // what it captured is released now, as before
  }
  if (!stop_requested_ && until != std::numeric_limits<TimeNs>::max()) now_ = until;
  stop_requested_ = false;
}

}  // namespace kvsim
