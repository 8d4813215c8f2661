// Simulator: clock, scheduling rules, run(until), stop(), cancellation through
// the simulator, events scheduled from callbacks, and reproducibility.
#include "base/checked_math.hpp"
#include "sim/core/simulator.hpp"

#include <gtest/gtest.h>

#include <functional>
#include <limits>
#include <map>
#include <random>
#include <stdexcept>
#include <string>
#include <tuple>
#include <utility>
#include <vector>

namespace kvsim::KVSIM_TEST_FILE_SCOPE {
namespace {

// A log line per event: (time it ran at, tag).
using Log = std::vector<std::pair<TimeNs, int>>;

class SimulatorTest : public ::testing::TestWithParam<std::string> {
 protected:
  Simulator sim_{make_event_queue(GetParam())};
  Log log_;

  EventCallback record(int tag) {
    return [this, tag] { log_.emplace_back(sim_.now(), tag); };
  }
};

TEST_P(SimulatorTest, ClockFollowsEventsInOrder) {
  sim_.schedule_at(300, 0, record(3));
  sim_.schedule_at(100, 0, record(1));
  sim_.schedule_in(200, 0, record(2));
  EXPECT_EQ(sim_.now(), 0);
  sim_.run();
  EXPECT_EQ(log_, (Log{{100, 1}, {200, 2}, {300, 3}}));
  EXPECT_EQ(sim_.now(), 300);  // run() to exhaustion leaves the clock at the last event
  EXPECT_EQ(sim_.events_processed(), 3u);
  EXPECT_EQ(sim_.pending_events(), 0u);
}

TEST_P(SimulatorTest, SchedulingInThePastThrows) {
  sim_.schedule_at(50, 0, [] {});
  sim_.run();
  ASSERT_EQ(sim_.now(), 50);
  EXPECT_THROW(sim_.schedule_at(49, 0, record(1)), std::logic_error);
  EXPECT_THROW(sim_.schedule_in(-1, 0, record(1)), std::logic_error);
  // A delay past the clock comes from the input (absurdly slow ops): an
  // input error (exit 2), not an internal one.
  EXPECT_THROW(sim_.schedule_in(std::numeric_limits<TimeNs>::max(), 0, record(1)),
               UnrepresentableQuantity);
  EXPECT_THROW(sim_.schedule_at(60, 0, EventCallback{}), std::logic_error);
  EXPECT_NO_THROW(sim_.schedule_at(50, 0, record(1)));  // "now" is not the past
  EXPECT_EQ(sim_.pending_events(), 1u);
}

TEST_P(SimulatorTest, RunUntilStopsBeforeLaterEventsAndKeepsThem) {
  sim_.schedule_at(10, 0, record(1));
  sim_.schedule_at(20, 0, record(2));
  sim_.schedule_at(21, 0, record(3));
  sim_.run(20);  // events at exactly `until` run
  EXPECT_EQ(log_, (Log{{10, 1}, {20, 2}}));
  EXPECT_EQ(sim_.pending_events(), 1u);
  EXPECT_EQ(sim_.now(), 20);
  sim_.run(15'000);
  EXPECT_EQ(log_.back(), (std::pair<TimeNs, int>{21, 3}));
  // Nothing left before `until`: the clock advances to it, so relative
  // scheduling afterwards counts from there.
  EXPECT_EQ(sim_.now(), 15'000);
  sim_.schedule_in(5, 0, record(4));
  sim_.run();
  EXPECT_EQ(log_.back(), (std::pair<TimeNs, int>{15'005, 4}));
  EXPECT_THROW(sim_.run(10), std::logic_error);  // until before now
}

TEST_P(SimulatorTest, StopFromInsideACallback) {
  sim_.schedule_at(1, 0, record(1));
  sim_.schedule_at(2, 0, [this] {
    log_.emplace_back(sim_.now(), 2);
    sim_.stop();
  });
  sim_.schedule_at(2, 1, record(3));  // same time, but after the stop
  sim_.schedule_at(9, 0, record(4));
  sim_.run(100);
  EXPECT_EQ(log_, (Log{{1, 1}, {2, 2}}));
  EXPECT_EQ(sim_.now(), 2);  // stop() does not jump to `until`
  EXPECT_EQ(sim_.events_processed(), 2u);
  sim_.run();  // continues where it stopped
  EXPECT_EQ(log_, (Log{{1, 1}, {2, 2}, {2, 3}, {9, 4}}));
}

TEST_P(SimulatorTest, StopOutsideRunDoesNotBlockTheNextRun) {
  sim_.schedule_at(1, 0, record(1));
  sim_.stop();
  sim_.run();
  EXPECT_EQ(log_.size(), 1u);
}

TEST_P(SimulatorTest, EventsScheduledFromCallbacksRunInOrder) {
  // At t=10 (priority 0) schedule, for the same time, a priority-1 event and
  // a priority-0 event; both must run after the current one, the priority-0
  // one first even though it was scheduled second. An already queued
  // priority-1 event at t=10 runs before the new priority-1 event (FIFO).
  sim_.schedule_at(10, 1, record(20));
  sim_.schedule_at(10, 0, [this] {
    log_.emplace_back(sim_.now(), 10);
    sim_.schedule_in(0, 1, record(21));
    sim_.schedule_at(sim_.now(), 0, record(11));
    sim_.schedule_in(5, -5, record(30));
  });
  sim_.schedule_at(15, 0, record(31));
  sim_.run();
  EXPECT_EQ(log_, (Log{{10, 10}, {10, 11}, {10, 20}, {10, 21}, {15, 30}, {15, 31}}));
}

TEST_P(SimulatorTest, CancelThroughSimulator) {
  EventHandle doomed = sim_.schedule_at(5, 0, record(1));
  EventHandle also_doomed = sim_.schedule_at(8, 0, record(2));
  sim_.schedule_at(3, 0, [this, also_doomed] { EXPECT_TRUE(sim_.cancel(also_doomed)); });
  EventHandle ran = sim_.schedule_at(9, 0, record(3));
  EXPECT_TRUE(sim_.cancel(doomed));
  EXPECT_FALSE(sim_.cancel(doomed));
  sim_.run();
  EXPECT_EQ(log_, (Log{{9, 3}}));
  EXPECT_FALSE(sim_.cancel(ran));
  EXPECT_FALSE(sim_.cancel(also_doomed));
  EXPECT_EQ(sim_.events_processed(), 2u);  // the canceller and tag 3
}

TEST_P(SimulatorTest, RunFromInsideACallbackThrows) {
  bool threw = false;
  sim_.schedule_at(1, 0, [this, &threw] {
    try {
      sim_.run();
    } catch (const std::logic_error&) {
      threw = true;
    }
  });
  sim_.run();
  EXPECT_TRUE(threw);
}

TEST_P(SimulatorTest, ExceptionFromCallbackPropagatesAndSimulatorStaysUsable) {
  sim_.schedule_at(1, 0, [] { throw std::runtime_error("boom"); });
  sim_.schedule_at(2, 0, record(2));
  EXPECT_THROW(sim_.run(), std::runtime_error);
  EXPECT_EQ(sim_.now(), 1);
  EXPECT_EQ(sim_.events_processed(), 1u);
  EXPECT_FALSE(sim_.running());
  sim_.run();
  EXPECT_EQ(log_, (Log{{2, 2}}));
}

// A small self-rescheduling system (clients with random think times that
// also cancel each other's timers) gives the same trace on every run and
// with every queue implementation.
Log run_random_system(const std::string& queue_name) {
  Simulator sim(make_event_queue(queue_name));
  Log log;
  std::mt19937_64 rng(7);
  std::vector<EventHandle> timers(8);
  std::function<void(int)> tick = [&](int client) {
    log.emplace_back(sim.now(), client);
    if (sim.events_processed() > 20'000) return;
    const int victim = static_cast<int>(rng() % timers.size());
    if (victim != client && rng() % 4 == 0 && sim.cancel(timers[victim])) {
      timers[victim] =
          sim.schedule_in(static_cast<TimeNs>(rng() % 50), 0, [&tick, victim] { tick(victim); });
    }
    timers[client] =
        sim.schedule_in(static_cast<TimeNs>(rng() % 100), static_cast<int32_t>(rng() % 3),
                        [&tick, client] { tick(client); });
  };
  for (int client = 0; client < 8; ++client) {
    timers[client] = sim.schedule_at(0, 0, [&tick, client] { tick(client); });
  }
  sim.run();
  return log;
}

TEST_P(SimulatorTest, RunsAreReproducibleAcrossRunsAndQueues) {
  const Log first = run_random_system(GetParam());
  EXPECT_GT(first.size(), 20'000u);
  EXPECT_EQ(first, run_random_system(GetParam()));
  EXPECT_EQ(first, run_random_system("binary_heap"));
  for (size_t i = 1; i < first.size(); ++i) ASSERT_LE(first[i - 1].first, first[i].first);
}

// Events scheduled for the current instant (held apart from the queue
// while the queue has nothing due then) still run in (time, priority,
// insertion) order with the queue's events of that instant.
TEST_P(SimulatorTest, EventsForNowKeepPriorityAndInsertionOrder) {
  // `first` + 0..3: scheduled for now, by a callback at `at`, in this order:
  // priorities 2, 0, 2, 1.
  auto burst = [this](TimeNs at, int first) {
    sim_.schedule_at(at, 1, [this, at, first] {
      log_.emplace_back(sim_.now(), first);
      sim_.schedule_at(at, 2, record(first + 4));
      sim_.schedule_in(0, 0, record(first + 2));
      sim_.schedule_at(at, 2, record(first + 5));
      sim_.schedule_at(at, 1, record(first + 3));
    });
  };
  burst(10, 1);  // nothing else at 10
  sim_.schedule_at(11, 0, record(7));
  burst(20, 11);
  // Queued at 20 before the burst's events: runs after those of priority 0,
  // before those of priority 1 and 2.
  sim_.schedule_at(20, 1, record(12));
  EXPECT_EQ(sim_.pending_events(), 4u);
  sim_.run();
  EXPECT_EQ(log_, (Log{{10, 1},
                       {10, 3},
                       {10, 4},
                       {10, 5},
                       {10, 6},
                       {11, 7},
                       {20, 11},
                       {20, 13},
                       {20, 12},
                       {20, 14},
                       {20, 15},
                       {20, 16}}));
  EXPECT_EQ(sim_.events_processed(), 12u);
}

TEST_P(SimulatorTest, EventsForNowCanBeCancelledAndAreCounted) {
  EventHandle late;
  sim_.schedule_at(5, 0, [this, &late] {
    const EventHandle gone = sim_.schedule_in(0, 1, record(9));
    late = sim_.schedule_in(0, 2, record(8));
    EXPECT_EQ(sim_.pending_events(), 2u);
    EXPECT_TRUE(sim_.cancel(gone));
    EXPECT_FALSE(sim_.cancel(gone));  // already cancelled
    EXPECT_EQ(sim_.pending_events(), 1u);
    sim_.stop();
  });
  sim_.run();
  EXPECT_EQ(sim_.now(), 5);
  EXPECT_EQ(sim_.pending_events(), 1u);  // the stop left 8 waiting, still at now
  sim_.run();
  EXPECT_EQ(log_, (Log{{5, 8}}));
  EXPECT_FALSE(sim_.cancel(late));         // already ran
  EXPECT_EQ(sim_.events_processed(), 2u);  // the cancelled event is not counted
  EXPECT_EQ(sim_.pending_events(), 0u);
}

// The earliest future event is held apart while it is strictly the
// earliest; a push at or before it puts it back in the queue, ahead of the
// pushed event, and its handle still cancels it.
TEST_P(SimulatorTest, HeldEarliestEventKeepsTheQueuesOrder) {
  sim_.schedule_at(50, 1, record(1));  // held (the queue is empty)
  sim_.schedule_at(60, 0, record(4));  // later: queued
  EXPECT_EQ(sim_.pending_events(), 2u);
  sim_.schedule_at(50, 1, record(2));  // a tie: FIFO after 1
  sim_.schedule_at(50, 0, record(0));  // a lower priority value: before 1
  const EventHandle early = sim_.schedule_at(40, 5, record(9));
  // 40 was held: it goes into the queue and 35 is held.
  const EventHandle gone = sim_.schedule_at(35, 0, record(8));
  EXPECT_TRUE(sim_.cancel(early));
  EXPECT_FALSE(sim_.cancel(early));
  EXPECT_TRUE(sim_.cancel(gone));
  EXPECT_EQ(sim_.pending_events(), 4u);
  sim_.run(49);  // nothing due: the clock moves to 49, the events stay
  EXPECT_EQ(sim_.now(), 49);
  EXPECT_EQ(sim_.pending_events(), 4u);
  sim_.run();
  EXPECT_EQ(log_, (Log{{50, 0}, {50, 1}, {50, 2}, {60, 4}}));
  EXPECT_EQ(sim_.events_processed(), 4u);
  // A held event cancelled, one that ran, and one queued behind a held one.
  const EventHandle held = sim_.schedule_in(5, 0, record(5));
  EXPECT_TRUE(sim_.cancel(held));
  const EventHandle ran = sim_.schedule_in(7, 0, record(6));
  sim_.schedule_in(9, 0, record(7));
  sim_.run();
  EXPECT_FALSE(sim_.cancel(ran));
  EXPECT_EQ(log_.back(), (std::pair<TimeNs, int>{69, 7}));
  EXPECT_EQ(sim_.events_processed(), 6u);
  EXPECT_EQ(sim_.pending_events(), 0u);
}

// A random system that schedules much of its work for the current instant
// with mixed priorities, and cancels some of it, against a reference that
// sorts every event by (time, priority, insertion) itself.
Log run_now_heavy_system(Simulator& sim, bool reference) {
  std::mt19937_64 rng(7);
  Log log;
  std::map<std::tuple<TimeNs, int32_t, uint64_t>, int> ref;  // the reference's queue
  TimeNs ref_now = 0;
  uint64_t ref_seq = 0;
  std::vector<EventHandle> handles;
  std::vector<decltype(ref)::iterator> ref_entries;
  std::function<void(int)> fire;
  auto schedule = [&](TimeNs delay, int32_t priority, int tag) {
    if (reference) {
      ref_entries.push_back(
          ref.emplace(std::make_tuple(ref_now + delay, priority, ref_seq++), tag).first);
    } else {
      handles.push_back(sim.schedule_in(delay, priority, [&fire, tag] { fire(tag); }));
    }
  };
  auto cancel = [&](size_t i) {
    if (reference) {
      if (ref_entries[i] == ref.end()) return;
      ref.erase(ref_entries[i]);
      ref_entries[i] = ref.end();
    } else {
      sim.cancel(handles[i]);
    }
  };
  int next_tag = 0;
  fire = [&](int tag) {
    log.emplace_back(reference ? ref_now : sim.now(), tag);
    if (next_tag > 30'000) return;
    const int children = 1 + static_cast<int>(rng() % 2);
    for (int c = 0; c < children; ++c) {
      const TimeNs delay = rng() % 2 == 0 ? 0 : static_cast<TimeNs>(rng() % 20);
      schedule(delay, static_cast<int32_t>(rng() % 4), next_tag++);
    }
    if (rng() % 5 == 0) cancel(static_cast<size_t>(rng() % static_cast<uint64_t>(next_tag)));
  };
  for (int i = 0; i < 4; ++i) schedule(0, static_cast<int32_t>(i % 2), next_tag++);
  if (reference) {
    while (!ref.empty()) {
      auto first = ref.begin();
      ref_now = std::get<0>(first->first);
      const int tag = first->second;
      ref_entries[static_cast<size_t>(tag)] = ref.end();  // tags number the schedules
      ref.erase(first);
      fire(tag);
    }
  } else {
    sim.run();
  }
  return log;
}

TEST_P(SimulatorTest, EventsForNowMatchAReferenceOrder) {
  Simulator reference_sim;
  const Log expected = run_now_heavy_system(reference_sim, /*reference=*/true);
  EXPECT_GT(expected.size(), 10'000u);
  EXPECT_EQ(run_now_heavy_system(sim_, /*reference=*/false), expected);
}

INSTANTIATE_TEST_SUITE_P(AllQueues, SimulatorTest, ::testing::ValuesIn(event_queue_names()),
                         [](const auto& param_info) { return param_info.param; });

TEST(Simulator, DefaultQueueAndNullQueue) {
  Simulator sim;
  EXPECT_EQ(sim.now(), 0);
  EXPECT_EQ(sim.events_processed(), 0u);
  sim.run();  // empty: returns at once and leaves the clock alone
  EXPECT_EQ(sim.now(), 0);
  EXPECT_THROW(Simulator(nullptr), std::invalid_argument);
}

}  // namespace
}  // namespace kvsim::KVSIM_TEST_FILE_SCOPE
