// Event queue: ordering (time, priority, FIFO), lazy cancel, handle safety
// after storage reuse, the callback type, the registry, and a randomized
// comparison with a std::multimap reference. Every test runs on every
// registered queue.
#include "sim/core/event_queue.hpp"

#include <gtest/gtest.h>

#include <algorithm>
#include <functional>
#include <limits>
#include <map>
#include <memory>
#include <random>
#include <stdexcept>
#include <string>
#include <tuple>
#include <vector>

namespace kvsim::KVSIM_TEST_FILE_SCOPE {
namespace {

class EventQueueTest : public ::testing::TestWithParam<std::string> {
 protected:
  std::unique_ptr<EventQueue> queue_ = make_event_queue(GetParam());
  std::vector<int> fired_;

  EventHandle push_tagged(TimeNs time, int32_t priority, int tag) {
    return queue_->push(time, priority, [this, tag] { fired_.push_back(tag); });
  }
  // Pops and runs everything; returns the times in pop order.
  std::vector<TimeNs> drain() {
    std::vector<TimeNs> times;
    while (!queue_->empty()) {
      PoppedEvent event = queue_->pop();
      times.push_back(event.time);
      event.callback();
    }
    return times;
  }
};

TEST_P(EventQueueTest, EarlierTimeFirst) {
  push_tagged(30, 0, 3);
  push_tagged(10, 0, 1);
  push_tagged(20, 0, 2);
  EXPECT_EQ(queue_->next_time(), 10);
  EXPECT_EQ(drain(), (std::vector<TimeNs>{10, 20, 30}));
  EXPECT_EQ(fired_, (std::vector<int>{1, 2, 3}));
}

TEST_P(EventQueueTest, AtEqualTimeLowerPriorityFirst) {
  push_tagged(5, 2, 2);
  push_tagged(5, -1, 0);
  push_tagged(5, 1, 1);
  push_tagged(4, 9, -1);
  drain();
  EXPECT_EQ(fired_, (std::vector<int>{-1, 0, 1, 2}));
}

TEST_P(EventQueueTest, ManyEqualEventsComeOutFifo) {
  // Enough events that the heap is many levels deep; a heap ordered on time
  // alone would scramble them.
  for (int i = 0; i < 5000; ++i) push_tagged(100, 0, i);
  drain();
  ASSERT_EQ(fired_.size(), 5000u);
  for (int i = 0; i < 5000; ++i) ASSERT_EQ(fired_[i], i) << "at position " << i;
}

TEST_P(EventQueueTest, FifoSurvivesInterleavedPops) {
  push_tagged(1, 0, 0);
  push_tagged(7, 0, 10);
  push_tagged(7, 0, 11);
  queue_->pop().callback();
  push_tagged(7, 0, 12);
  push_tagged(7, 0, 13);
  drain();
  EXPECT_EQ(fired_, (std::vector<int>{0, 10, 11, 12, 13}));
}

TEST_P(EventQueueTest, SizeAndEmptyCountLiveEventsOnly) {
  EXPECT_TRUE(queue_->empty());
  EXPECT_EQ(queue_->size(), 0u);
  EventHandle a = push_tagged(1, 0, 1);
  push_tagged(2, 0, 2);
  EXPECT_EQ(queue_->size(), 2u);
  EXPECT_TRUE(queue_->cancel(a));
  EXPECT_EQ(queue_->size(), 1u);
  EXPECT_EQ(queue_->next_time(), 2);  // the cancelled front is skipped
  queue_->pop();
  EXPECT_TRUE(queue_->empty());
}

TEST_P(EventQueueTest, CancelledEventNeverFires) {
  push_tagged(1, 0, 1);
  EventHandle middle = push_tagged(2, 0, 2);
  push_tagged(3, 0, 3);
  EXPECT_TRUE(queue_->cancel(middle));
  EXPECT_EQ(drain(), (std::vector<TimeNs>{1, 3}));
  EXPECT_EQ(fired_, (std::vector<int>{1, 3}));
}

TEST_P(EventQueueTest, CancelAfterRunOrTwiceReturnsFalse) {
  EventHandle ran = push_tagged(1, 0, 1);
  EventHandle cancelled = push_tagged(2, 0, 2);
  push_tagged(3, 0, 3);
  queue_->pop().callback();
  EXPECT_FALSE(queue_->cancel(ran));
  EXPECT_TRUE(queue_->cancel(cancelled));
  EXPECT_FALSE(queue_->cancel(cancelled));
  EXPECT_EQ(queue_->size(), 1u);
  drain();
  EXPECT_EQ(fired_, (std::vector<int>{1, 3}));
}

TEST_P(EventQueueTest, InvalidAndForeignHandlesAreRejected) {
  push_tagged(1, 0, 1);
  EXPECT_FALSE(queue_->cancel(EventHandle{}));
  EXPECT_FALSE(queue_->cancel(EventHandle{0xffffffffffffffffull}));
  EXPECT_FALSE(queue_->cancel(EventHandle{(uint64_t{1} << 32) | 12345u}));  // slot never used
  EXPECT_EQ(queue_->size(), 1u);
}

TEST_P(EventQueueTest, StaleHandleDoesNotCancelEventThatReusedItsStorage) {
  // With one event in flight at a time, each push reuses the storage of the
  // previous one. Old handles must match nothing.
  EventHandle first = push_tagged(1, 0, 1);
  EXPECT_TRUE(queue_->cancel(first));
  EventHandle second = push_tagged(2, 0, 2);
  EXPECT_NE(first, second);
  EXPECT_FALSE(queue_->cancel(first));
  queue_->pop().callback();
  EventHandle third = push_tagged(3, 0, 3);
  EXPECT_FALSE(queue_->cancel(first));
  EXPECT_FALSE(queue_->cancel(second));
  EXPECT_EQ(queue_->size(), 1u);
  drain();
  EXPECT_EQ(fired_, (std::vector<int>{2, 3}));
  EXPECT_FALSE(queue_->cancel(third));
}

TEST_P(EventQueueTest, CancelReleasesCapturedResourcesAtOnce) {
  auto token = std::make_shared<int>(7);
  std::weak_ptr<int> watch = token;
  EventHandle handle = queue_->push(50, 0, [token = std::move(token)] { (void)*token; });
  push_tagged(1, 0, 1);  // keeps the cancelled key off the front
  ASSERT_FALSE(watch.expired());
  EXPECT_TRUE(queue_->cancel(handle));
  EXPECT_TRUE(watch.expired());
}

TEST_P(EventQueueTest, MassCancellationThenMoreWorkKeepsOrder) {
  // Cancelling most of a large queue triggers compaction; the survivors and
  // later pushes must still come out in order.
  std::vector<EventHandle> handles;
  for (int i = 0; i < 4000; ++i) handles.push_back(push_tagged(4000 - i, i % 3, i));
  for (int i = 0; i < 4000; ++i) {
    if (i % 10 != 0) {
      ASSERT_TRUE(queue_->cancel(handles[i]));
    }
  }
  EXPECT_EQ(queue_->size(), 400u);
  for (int i = 0; i < 4000; ++i) {
    if (i % 10 != 0) {
      ASSERT_FALSE(queue_->cancel(handles[i]));
    }
  }
  push_tagged(0, 0, -1);
  std::vector<TimeNs> times = drain();
  ASSERT_EQ(times.size(), 401u);
  EXPECT_TRUE(std::is_sorted(times.begin(), times.end()));
  EXPECT_EQ(fired_.front(), -1);
}

TEST_P(EventQueueTest, TiesAcrossManyLevelsStayFifoWithinPriority) {
  // Thousands of events on a few times and priorities: the heap is several
  // levels deep (and spans many cache-line groups in the aligned heap), so
  // ties are decided deep in the tree, not only at the front.
  for (int i = 0; i < 6000; ++i) push_tagged(i % 3, (i * 7) % 5 - 2, i);
  drain();
  ASSERT_EQ(fired_.size(), 6000u);
  for (size_t k = 1; k < fired_.size(); ++k) {
    const int a = fired_[k - 1];
    const int b = fired_[k];
    const auto order = [](int i) { return std::make_tuple(i % 3, (i * 7) % 5 - 2, i); };
    ASSERT_LT(order(a), order(b)) << "at position " << k;
  }
}

TEST_P(EventQueueTest, CancellingFrontsAndDeepKeysWhileHolding) {
  // A hold pattern (pop one, push one later) with every third event
  // cancelled, some of them at the front: the survivors run in order and
  // the cancelled never run.
  std::vector<EventHandle> handles;
  for (int i = 0; i < 3000; ++i) handles.push_back(push_tagged(i / 2, i % 2, i));
  for (int i = 0; i < 3000; i += 3) ASSERT_TRUE(queue_->cancel(handles[i]));
  TimeNs last_time = std::numeric_limits<TimeNs>::min();
  int pushed = 3000;
  for (int step = 0; step < 1500; ++step) {
    PoppedEvent event = queue_->pop();
    ASSERT_GE(event.time, last_time);
    last_time = event.time;
    event.callback();
    ASSERT_NE(fired_.back() % 3 == 0 && fired_.back() < 3000, true);
    push_tagged(event.time + 1 + step % 7, step % 2, pushed++);
  }
  EXPECT_EQ(queue_->size(), 2000u);
}

// A simulator mostly pushes the event it pops next (a step's end, a kick
// at the current time): pushing before the front, cancelling the front and
// popping keep the order and the counts.
TEST_P(EventQueueTest, PushingAndCancellingTheFrontKeepsOrderAndCounts) {
  push_tagged(100, 0, 0);
  push_tagged(50, 0, 1);                         // the front now
  const EventHandle c = push_tagged(50, -1, 2);  // earlier still: the front
  EXPECT_TRUE(queue_->cancel(c));                // the front leaves
  EXPECT_FALSE(queue_->cancel(c));
  EXPECT_EQ(queue_->size(), 2u);
  EXPECT_EQ(queue_->next_time(), 50);
  const EventHandle d = push_tagged(10, 0, 3);
  EXPECT_EQ(queue_->next_time(), 10);
  EXPECT_TRUE(queue_->cancel(d));
  push_tagged(50, 0, 4);  // after tag 1: FIFO at equal time and priority
  EXPECT_EQ(queue_->next_time(), 50);
  // Pop one, then push before everything left, as a step's end would be.
  PoppedEvent first = queue_->pop();
  first.callback();
  push_tagged(60, 0, 5);
  push_tagged(50, 1, 6);
  EXPECT_EQ(drain(), (std::vector<TimeNs>{50, 50, 60, 100}));
  EXPECT_EQ(fired_, (std::vector<int>{1, 4, 6, 5, 0}));
  EXPECT_TRUE(queue_->empty());
}

// pop_due() is empty(), next_time() and pop() in one call: nothing when
// the queue is empty or its front is later than `until`, else the front.
TEST_P(EventQueueTest, PopDueTakesTheFrontOnlyWhenDue) {
  PoppedEvent event;
  EXPECT_FALSE(queue_->pop_due(100, event));
  push_tagged(20, 0, 0);
  push_tagged(10, 1, 1);
  const EventHandle c = push_tagged(10, 0, 2);
  push_tagged(10, 1, 3);
  EXPECT_FALSE(queue_->pop_due(9, event));
  EXPECT_EQ(queue_->size(), 4u);
  EXPECT_TRUE(queue_->cancel(c));
  std::vector<TimeNs> times;
  while (queue_->pop_due(15, event)) {
    times.push_back(event.time);
    event.callback();
  }
  EXPECT_EQ(times, (std::vector<TimeNs>{10, 10}));
  EXPECT_EQ(fired_, (std::vector<int>{1, 3}));
  EXPECT_EQ(queue_->next_time(), 20);
  ASSERT_TRUE(queue_->pop_due(20, event));
  event.callback();
  EXPECT_EQ(fired_.back(), 0);
  EXPECT_TRUE(queue_->empty());
}

// The interface's own pop_due (for a queue that does not provide one) is
// the same.
TEST_P(EventQueueTest, DefaultPopDueMatches) {
  struct Forwarding final : EventQueue {
    std::unique_ptr<EventQueue> inner;
    EventHandle push(TimeNs t, int32_t p, EventCallback&& c) override {
      return inner->push(t, p, std::move(c));
    }
    bool cancel(EventHandle h) override { return inner->cancel(h); }
    bool empty() const override { return inner->empty(); }
    size_t size() const override { return inner->size(); }
    TimeNs next_time() const override { return inner->next_time(); }
    PoppedEvent pop() override { return inner->pop(); }
  } forwarding;
  forwarding.inner = std::move(queue_);
  PoppedEvent event;
  EXPECT_FALSE(forwarding.pop_due(5, event));
  forwarding.push(7, 0, [this] { fired_.push_back(7); });
  forwarding.push(3, 0, [this] { fired_.push_back(3); });
  EXPECT_FALSE(forwarding.pop_due(2, event));
  ASSERT_TRUE(forwarding.pop_due(5, event));
  EXPECT_EQ(event.time, 3);
  event.callback();
  EXPECT_FALSE(forwarding.pop_due(5, event));
  ASSERT_TRUE(forwarding.pop_due(7, event));
  event.callback();
  EXPECT_EQ(fired_, (std::vector<int>{3, 7}));
  EXPECT_TRUE(forwarding.empty());
}

TEST_P(EventQueueTest, PopAndNextTimeOnEmptyThrow) {
  EXPECT_THROW(queue_->pop(), std::logic_error);
  EXPECT_THROW((void)queue_->next_time(), std::logic_error);
  EventHandle only = push_tagged(1, 0, 1);
  queue_->cancel(only);
  EXPECT_THROW(queue_->pop(), std::logic_error);
}

TEST_P(EventQueueTest, ExtremeTimesAndPriorities) {
  constexpr TimeNs kMax = std::numeric_limits<TimeNs>::max();
  constexpr int32_t kLowest = std::numeric_limits<int32_t>::min();
  constexpr int32_t kHighest = std::numeric_limits<int32_t>::max();
  push_tagged(kMax, kHighest, 3);
  push_tagged(kMax, kLowest, 2);
  push_tagged(0, kHighest, 1);
  push_tagged(0, kLowest, 0);
  push_tagged(-1, 0, -1);  // the queue itself accepts negative times
  push_tagged(std::numeric_limits<TimeNs>::min(), kHighest, -2);
  EXPECT_EQ(drain(),
            (std::vector<TimeNs>{std::numeric_limits<TimeNs>::min(), -1, 0, 0, kMax, kMax}));
  EXPECT_EQ(fired_, (std::vector<int>{-2, -1, 0, 1, 2, 3}));
}

// Reference model: (time, priority, sequence) -> tag. 100k random push, pop,
// cancel and stale-cancel operations, with many equal times so ties are
// exercised, compared after every operation.
TEST_P(EventQueueTest, MatchesMultimapReferenceOnRandomOperations) {
  using Key = std::tuple<TimeNs, int32_t, uint64_t>;
  std::multimap<Key, int> reference;
  std::map<int, std::pair<Key, EventHandle>> pending_by_tag;
  std::vector<int> retired_tags;  // ran or cancelled: their handles must fail
  std::vector<EventHandle> handle_of_tag;
  std::mt19937_64 rng(20240607);
  uint64_t sequence = 0;
  TimeNs floor_time = 0;  // time of the last pop
  int next_tag = 0;

  for (int op = 0; op < 100'000; ++op) {
    // Phase 1 grows the queue; phase 2 cancels more than it pushes, so
    // cancelled keys pile up inside the heap and compaction runs.
    const bool cancel_heavy = op >= 60'000;
    const unsigned push_below = cancel_heavy ? 35 : 50;
    const unsigned pop_below = cancel_heavy ? 45 : 80;
    const unsigned dice = static_cast<unsigned>(rng() % 100);
    if (dice < push_below || reference.empty()) {
      // Mostly at or after the last popped time, with frequent ties, like a
      // simulator; sometimes before it, which the queue itself allows.
      const bool before_floor = rng() % 50 == 0;
      const TimeNs time = before_floor ? floor_time - static_cast<TimeNs>(rng() % 1000)
                                       : floor_time + static_cast<TimeNs>(rng() % 16);
      const int32_t priority = static_cast<int32_t>(rng() % 3) - 1;
      const int tag = next_tag++;
      EventHandle handle = push_tagged(time, priority, tag);
      const Key key{time, priority, sequence++};
      reference.emplace(key, tag);
      pending_by_tag[tag] = {key, handle};
      handle_of_tag.push_back(handle);
    } else if (dice < pop_below) {
      ASSERT_EQ(queue_->next_time(), std::get<0>(reference.begin()->first));
      PoppedEvent event = queue_->pop();
      event.callback();
      const auto [key, tag] = *reference.begin();
      reference.erase(reference.begin());
      ASSERT_EQ(event.time, std::get<0>(key));
      ASSERT_EQ(fired_.back(), tag) << "op " << op;
      floor_time = event.time;
      pending_by_tag.erase(tag);
      retired_tags.push_back(tag);
    } else if (dice < 95) {
      auto it = pending_by_tag.begin();
      std::advance(it, static_cast<long>(rng() % pending_by_tag.size()));
      const auto [tag, entry] = *it;
      ASSERT_TRUE(queue_->cancel(entry.second));
      auto range = reference.equal_range(entry.first);
      ASSERT_NE(range.first, range.second);
      reference.erase(range.first);
      pending_by_tag.erase(it);
      retired_tags.push_back(tag);
    } else if (!retired_tags.empty()) {
      const int tag = retired_tags[rng() % retired_tags.size()];
      ASSERT_FALSE(queue_->cancel(handle_of_tag[tag])) << "stale handle of tag " << tag;
    }
    ASSERT_EQ(queue_->size(), reference.size());
    ASSERT_EQ(queue_->empty(), reference.empty());
  }
  while (!reference.empty()) {
    PoppedEvent event = queue_->pop();
    event.callback();
    ASSERT_EQ(fired_.back(), reference.begin()->second);
    reference.erase(reference.begin());
  }
  EXPECT_TRUE(queue_->empty());
}

INSTANTIATE_TEST_SUITE_P(AllQueues, EventQueueTest, ::testing::ValuesIn(event_queue_names()),
                         [](const auto& param_info) { return param_info.param; });

// Queues keep a 32-bit insertion sequence and renumber the queued keys when
// it runs out. Start just below the limit so the renumbering happens while
// equal-time events of several priorities are queued.
TEST_P(EventQueueTest, FifoSurvivesSequenceRenumbering) {
  queue_ = detail::make_event_queue_for_testing(GetParam(), 0xffffffffull - 50);
  std::vector<EventHandle> handles;
  for (int i = 0; i < 300; ++i) {  // renumbering happens at push 51
    handles.push_back(push_tagged(i % 5, i % 3, i));
    if (i % 7 == 0) queue_->pop().callback();
  }
  EXPECT_TRUE(queue_->cancel(handles[299]));
  EXPECT_FALSE(queue_->cancel(handles[0]));  // popped before the renumbering
  drain();
  // Replay with a reference: each pop takes the earliest (time, priority,
  // push index) among what was queued at that moment.
  std::multimap<std::tuple<TimeNs, int32_t, int>, int> reference;
  std::vector<int> expected;
  for (int i = 0; i < 300; ++i) {
    if (i != 299) reference.emplace(std::make_tuple(TimeNs{i % 5}, i % 3, i), i);
    if (i % 7 == 0) {
      expected.push_back(reference.begin()->second);
      reference.erase(reference.begin());
    }
  }
  for (const auto& entry : reference) expected.push_back(entry.second);
  EXPECT_EQ(fired_, expected);
}

TEST(EventQueueRegistry, ListsEveryQueue) {
  EXPECT_EQ(event_queue_names(),
            (std::vector<std::string>{"binary_heap", "quaternary_heap", "aligned_quaternary_heap",
                                      "radix_heap"}));
  EXPECT_NE(make_event_queue(), nullptr);
}

TEST(EventQueueRegistry, UnknownNameListsKnownNames) {
  try {
    make_event_queue("fibonacci_heap");
    FAIL() << "expected std::invalid_argument";
  } catch (const std::invalid_argument& error) {
    const std::string message = error.what();
    EXPECT_NE(message.find("fibonacci_heap"), std::string::npos);
    EXPECT_NE(message.find("binary_heap"), std::string::npos);
    EXPECT_NE(message.find("quaternary_heap"), std::string::npos);
  }
}

TEST(EventCallback, HoldsMoveOnlyCaptures) {
  auto owned = std::make_unique<int>(41);
  int seen = 0;
  EventCallback callback = [owned = std::move(owned), &seen] { seen = *owned + 1; };
  EventCallback moved = std::move(callback);
  EXPECT_FALSE(static_cast<bool>(callback));  // NOLINT: checking the moved-from state
  ASSERT_TRUE(static_cast<bool>(moved));
  moved();
  EXPECT_EQ(seen, 42);
}

TEST(EventCallback, LargeCapturesGoToTheHeapAndStillWork) {
  struct Big {
    int64_t values[16];
  };
  Big big{};
  for (int i = 0; i < 16; ++i) big.values[i] = i;
  int64_t sum = 0;
  EventCallback callback = [big, &sum] {
    for (int64_t v : big.values) sum += v;
  };
  EventCallback moved = std::move(callback);
  moved();
  EXPECT_EQ(sum, 120);
}

TEST(EventCallback, DestroysCaptureExactlyOnce) {
  auto token = std::make_shared<int>(0);
  {
    EventCallback a = [token] {};
    EventCallback b = std::move(a);
    EventCallback c;
    c = std::move(b);
    EXPECT_EQ(token.use_count(), 2);
    c.reset();
    EXPECT_EQ(token.use_count(), 1);
    EventCallback d = [token] {};
    EXPECT_EQ(token.use_count(), 2);
  }
  EXPECT_EQ(token.use_count(), 1);
}

TEST(EventCallback, MutableStateAndStdFunctionWork) {
  int calls = 0;
  EventCallback counter = [&calls, n = 0]() mutable { calls = ++n; };
  counter();
  counter();
  EXPECT_EQ(calls, 2);
  std::function<void()> wrapped = [&calls] { calls = 100; };
  EventCallback from_function = wrapped;
  from_function();
  EXPECT_EQ(calls, 100);
  EventCallback empty = nullptr;
  EXPECT_FALSE(static_cast<bool>(empty));
  void (*no_function)() = nullptr;
  EXPECT_FALSE(static_cast<bool>(EventCallback(no_function)));
}

}  // namespace
}  // namespace kvsim::KVSIM_TEST_FILE_SCOPE
