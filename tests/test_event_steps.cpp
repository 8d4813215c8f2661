// EventSteps (the scheduler's step of each running sequence's next look):
// the list of entries due in a step against a plain pass over the 64-bit
// steps, for sizes around the 8-entry words, steps far ahead and far behind,
// runs past the point where the 32-bit copies move their base, entries
// that move down or leave as sequences finish or are preempted, and a start
// that moves on as the front leaves (drop_front) and back (rewind).
#include <gtest/gtest.h>

#include <algorithm>
#include <cstdint>
#include <limits>
#include <random>
#include <vector>

#include "sim/serve/event_steps.hpp"

namespace kvsim::KVSIM_TEST_FILE_SCOPE {
namespace {

std::vector<uint32_t> due(EventSteps& steps, int64_t now) {
  std::vector<uint32_t> out(steps.size());
  out.resize(steps.list_due(now, out.data()));
  return out;
}

// Entries never due after the ones a test looks at, so that the list is
// built from the 32-bit copies (a small set goes one entry at a time).
void pad_past_few(EventSteps& steps) {
  while (steps.size() < EventSteps::kFewEntries)
    steps.insert(steps.size(), std::numeric_limits<int64_t>::max());
}

std::vector<uint32_t> due_plainly(const EventSteps& steps, int64_t now) {
  std::vector<uint32_t> out;
  for (size_t i = 0; i < steps.size(); ++i)
    if (steps[i] <= now) out.push_back(static_cast<uint32_t>(i));
  return out;
}

TEST(EventSteps, ListsTheDueEntriesInOrderForEverySizeAroundAWord) {
  std::mt19937_64 rng(7);
  for (const size_t n :
       {0, 1, 7, 8, 9, 15, 16, 17, 63, 64, 65, 79, 80, 81, 127, 128, 129, 1000, 1024}) {
    EventSteps steps;
    for (size_t i = 0; i < n; ++i)
      steps.insert(i, static_cast<int64_t>(rng() % 40));  // 0: due in every step
    for (int64_t now = 1; now < 40; now += 3)
      ASSERT_EQ(due(steps, now), due_plainly(steps, now)) << "n " << n << " now " << now;
  }
}

TEST(EventSteps, AStepFarAheadIsNotDueAndOneFarBehindIs) {
  EventSteps steps;
  steps.insert(0, int64_t{1} << 40);                     // beyond 32 bits from the base
  steps.insert(1, std::numeric_limits<int64_t>::max());  // never
  steps.insert(2, 12);
  steps.insert(3, 13);
  pad_past_few(steps);
  EXPECT_EQ(due(steps, 12), (std::vector<uint32_t>{2}));
  EXPECT_EQ(due(steps, int64_t{1} << 35), (std::vector<uint32_t>{2, 3}));
  // Far behind a base that moved on: still due.
  steps.set(2, 0);
  EXPECT_EQ(due(steps, (int64_t{1} << 35) + 1), (std::vector<uint32_t>{2, 3}));
  EXPECT_EQ(due(steps, (int64_t{1} << 40) - 1), (std::vector<uint32_t>{2, 3}));
  EXPECT_EQ(due(steps, int64_t{1} << 40), (std::vector<uint32_t>{0, 2, 3}));
}

TEST(EventSteps, AnswersStayExactAcrossTheCopiesRebase) {
  // A step set when it did not fit the 32-bit copies (saturated) becomes
  // due once the base has moved on to it; steps around each rebase point
  // fall due exactly in their step.
  EventSteps steps;
  const int64_t far = (int64_t{1} << 31) + 5;
  steps.insert(0, far);
  steps.insert(1, EventSteps::kRebase);
  steps.insert(2, EventSteps::kRebase - 1);
  steps.insert(3, 2 * EventSteps::kRebase + 9);  // after `far`
  pad_past_few(steps);
  EXPECT_TRUE(due(steps, 1).empty());
  EXPECT_EQ(due(steps, EventSteps::kRebase - 1), (std::vector<uint32_t>{2}));
  EXPECT_EQ(due(steps, EventSteps::kRebase), (std::vector<uint32_t>{1, 2}));
  EXPECT_EQ(due(steps, far - 1), (std::vector<uint32_t>{1, 2}));
  EXPECT_EQ(due(steps, far), (std::vector<uint32_t>{0, 1, 2}));
  EXPECT_EQ(due(steps, 2 * EventSteps::kRebase + 8), (std::vector<uint32_t>{0, 1, 2}));
  EXPECT_EQ(due(steps, 2 * EventSteps::kRebase + 9), (std::vector<uint32_t>{0, 1, 2, 3}));
  // Random steps over a long run, looked at every so many steps.
  std::mt19937_64 rng(11);
  EventSteps many;
  for (size_t i = 0; i < 300; ++i) many.insert(i, 0);
  for (int64_t now = 1; now < 5 * EventSteps::kRebase; now += EventSteps::kRebase / 7 + 3) {
    for (size_t i = 0; i < many.size(); ++i)
      if (many[i] <= now) many.set(i, now + static_cast<int64_t>(rng() % (EventSteps::kRebase)));
    for (const int64_t later : {now + 1, now + EventSteps::kRebase / 3})
      ASSERT_EQ(due(many, later), due_plainly(many, later)) << "step " << later;
  }
}

TEST(EventSteps, EntriesThatLeaveOrMoveDownKeepTheirSteps) {
  // As the running set drops finished sequences (stretches move down) and
  // preempts the latest (the last entry leaves).
  EventSteps steps;
  for (size_t i = 0; i < 20; ++i) steps.insert(i, static_cast<int64_t>(100 + i));
  steps.move_down(5, 20, 3);  // entries 3 and 4 finished
  steps.resize(18);
  steps.pop_back();  // the latest is preempted
  ASSERT_EQ(steps.size(), 17U);
  EXPECT_EQ(steps[2], 102);
  EXPECT_EQ(steps[3], 105);
  EXPECT_EQ(steps[16], 118);
  EXPECT_EQ(due(steps, 105), (std::vector<uint32_t>{0, 1, 2, 3}));
  EXPECT_EQ(due(steps, 118), due_plainly(steps, 118));
  EXPECT_EQ(due(steps, 118).size(), 17U);
  // An arrival in the middle (a readmitted sequence) shifts the rest.
  steps.insert(1, 0);
  EXPECT_EQ(due(steps, 100), (std::vector<uint32_t>{0, 1}));
}

TEST(EventSteps, AStartThatMovesOnListsThePlacesFromIt) {
  // Random drops at the front (the start moves by any count, so the words
  // begin before it), drops elsewhere (stretches move up or down), arrivals
  // at the back and in the middle, preemptions and rewinds, against a
  // plain list of the steps; sizes cross the small-batch bound and the
  // 64-entry words.
  std::mt19937_64 rng(17);
  EventSteps steps;
  std::vector<int64_t> plain;
  std::vector<size_t> sizes_seen;
  auto random_step = [&](int64_t now) {
    return rng() % 5 == 0 ? int64_t{0} : now + 1 + static_cast<int64_t>(rng() % 24);
  };
  for (int64_t now = 1; now < 3000; ++now) {
    switch (rng() % 8) {
      case 0: {  // the front leaves
        // Now and then most of them, so that the set falls below the
        // small-batch bound and grows past it again.
        const size_t count = std::min<size_t>(
            plain.size(), rng() % 10 == 0 ? rng() % (plain.size() + 1) : rng() % 6);
        steps.drop_front(count);
        plain.erase(plain.begin(), plain.begin() + static_cast<std::ptrdiff_t>(count));
        break;
      }
      case 1:  // back to the start of the storage
        steps.rewind();
        EXPECT_EQ(steps.head(), 0U);
        break;
      case 2:
        if (plain.size() >= 3) {  // place 1 leaves: what is before it moves up
          steps.move_up(0, 1, 2);
          steps.drop_front(1);
          plain.erase(plain.begin() + 1);
        }
        break;
      case 3:
        if (plain.size() >= 3) {  // place 1 leaves: what is after it moves down
          steps.move_down(2, plain.size(), 1);
          steps.resize(plain.size() - 1);
          plain.erase(plain.begin() + 1);
        }
        break;
      case 4:
        if (!plain.empty()) {  // the latest is preempted
          steps.pop_back();
          plain.pop_back();
        }
        break;
      default:  // arrivals, mostly at the back
        for (size_t k = rng() % 4 + (plain.size() < 150 ? 4 : 0); k > 0; --k) {
          const size_t at = rng() % 6 == 0 ? rng() % (plain.size() + 1) : plain.size();
          const int64_t step = random_step(now);
          steps.insert(at, step);
          plain.insert(plain.begin() + static_cast<std::ptrdiff_t>(at), step);
        }
    }
    ASSERT_EQ(steps.size(), plain.size());
    sizes_seen.push_back(plain.size());
    std::vector<uint32_t> expected;
    for (size_t i = 0; i < plain.size(); ++i)
      if (plain[i] <= now) expected.push_back(static_cast<uint32_t>(i));
    ASSERT_EQ(due(steps, now), expected) << "step " << now << " head " << steps.head();
    // The due ones look again later, as the scheduler sets them.
    for (const uint32_t i : expected) {
      const int64_t step = random_step(now);
      if (step <= now || rng() % 2 == 0)
        steps.set(i, step);
      else
        steps.set_ahead(i, step);
      plain[i] = step;
    }
    for (size_t i = 0; i < plain.size(); ++i) ASSERT_EQ(steps[i], plain[i]);
  }
  // Both the one-at-a-time and the word paths were taken.
  EXPECT_LT(*std::min_element(sizes_seen.begin(), sizes_seen.end()), EventSteps::kFewEntries);
  EXPECT_GT(*std::max_element(sizes_seen.begin(), sizes_seen.end()), 2 * EventSteps::kFewEntries);
  size_t small = 0;
  for (const size_t n : sizes_seen) small += n < EventSteps::kFewEntries ? 1 : 0;
  EXPECT_LT(small, sizes_seen.size() / 2);
}

}  // namespace
}  // namespace kvsim::KVSIM_TEST_FILE_SCOPE
