// The scheduler's running set as sequences finish at its front, middle and
// back: it keeps arrival order whichever side closes the gaps
// (Scheduler::drop_finished moves the shorter side; its front leaves
// without a move, FrontDropVector), across the point where the entries go
// back to the start of their storage. Checked through the order in which
// the next step schedules the running sequences (one by one: every running
// decode is an item, in arrival order), against a plain list.
#include <gtest/gtest.h>

#include <algorithm>
#include <cstdint>
#include <deque>
#include <memory>
#include <numeric>
#include <random>
#include <type_traits>
#include <vector>

#include "sim/cache/paged_policy.hpp"
#include "sim/cache/paged_window_policy.hpp"
#include "sim/serve/front_drop_vector.hpp"
#include "sim/serve/scheduler.hpp"
#include "tests/support/step_commits.hpp"

namespace kvsim::KVSIM_TEST_FILE_SCOPE {
namespace {

TEST(FrontDropVector, DropsTheFrontWithoutMovesAndRewindsToTheStart) {
  FrontDropVector<int> v;
  for (int i = 0; i < 10; ++i) v.push_back(i);
  v.drop_front(3);
  ASSERT_EQ(v.size(), 7U);
  EXPECT_EQ(v.head(), 3U);
  EXPECT_EQ(v[0], 3);
  EXPECT_EQ(v.back(), 9);
  // Places 0 and 2 (3 and 5) leave as drop_finished takes them: what is
  // kept before the last of them moves up next to it, then the front goes.
  v.move_up(1, 2, 3);
  v.drop_front(2);
  EXPECT_EQ(std::vector<int>(v.begin(), v.end()), (std::vector<int>{4, 6, 7, 8, 9}));
  // Or the entries after the first move down, and the back goes.
  v.move_down(2, 5, 1);
  v.resize(3);
  EXPECT_EQ(std::vector<int>(v.begin(), v.end()), (std::vector<int>{4, 7, 8}));
  v.insert(1, 100);
  v.insert(v.size(), 200);
  v.pop_back();
  EXPECT_EQ(std::vector<int>(v.begin(), v.end()), (std::vector<int>{4, 100, 7, 8}));
  v.rewind();
  EXPECT_EQ(v.head(), 0U);
  EXPECT_EQ(std::vector<int>(v.begin(), v.end()), (std::vector<int>{4, 100, 7, 8}));
  v.drop_front(v.size());
  EXPECT_TRUE(v.empty());
  v.rewind();
  v.push_back(7);
  EXPECT_EQ(v[0], 7);
  EXPECT_EQ(v.size(), 1U);
}

constexpr int64_t kBlock = 4;

// The policies the benches run over: `paged`, whose bulk loop the
// scheduler calls directly (Scheduler::bulk_loop_for), and a window wider
// than any sequence, which it asks through KvCachePolicy.
PagedParams paged_params() {
  PagedParams params;
  params.num_blocks = 40000;
  params.block_size = kBlock;
  params.block_bytes = 1;
  params.prefix_caching = true;
  return params;
}
PagedWindowParams window_params() {
  PagedWindowParams params;
  params.num_blocks = 40000;
  params.block_size = kBlock;
  params.block_bytes = 1;
  params.window = 1 << 20;
  return params;
}

template <class Policy = PagedPolicy>
struct Bench {
  explicit Bench(bool bulk)
      : policy([] {
          if constexpr (std::is_same_v<Policy, PagedPolicy>)
            return paged_params();
          else
            return window_params();
        }()),
        scheduler(
            [bulk] {
              SchedulerParams sp;
              sp.max_num_seqs = 512;
              sp.max_batched_tokens = 1 << 16;
              sp.bulk_decodes = bulk;
              return sp;
            }(),
            policy) {}

  Sequence* add(uint64_t id) {
    auto seq = std::make_unique<Sequence>();
    seq->request.id = id;
    std::vector<int32_t> prompt(3 + id % 5);
    std::iota(prompt.begin(), prompt.end(), static_cast<int32_t>(1000 * id));
    std::vector<int32_t> output(2000);
    std::iota(output.begin(), output.end(), static_cast<int32_t>(1000 * id + 7));
    seq->request.prompt = std::move(prompt);
    seq->request.output = std::move(output);
    seq->prompt_tokens = seq->prompt_len();
    seq->output_tokens = seq->output_len();
    scheduler.add_waiting(seq.get());
    seqs.push_back(std::move(seq));
    return seqs.back().get();
  }

  // One step as the engine takes it (ServingEngine::on_step_done, without
  // latencies: commits in batch order, bulk decodes' among the items',
  // then tokens sampled); returns the items' sequences in batch order.
  std::vector<const Sequence*> step() {
    scheduler.schedule(batch);
    std::vector<const Sequence*> order;
    for (const ScheduledSeq& item : batch.items) order.push_back(item.seq);
    commit_step_one_by_one(scheduler, policy, batch);
    for (const ScheduledSeq& item : batch.items)
      if (item.seq->computed >= item.seq->known_tokens()) ++item.seq->generated;
    scheduler.step_done(++now);
    return order;
  }

  Policy policy;
  Scheduler scheduler;
  ScheduledBatch batch;
  std::vector<std::unique_ptr<Sequence>> seqs;
  int64_t now = 0;
};

TEST(SchedulerRunningSet, FinishesAtTheFrontMiddleBackAndAllKeepArrivalOrder) {
  Bench<> bench(/*bulk=*/false);
  std::deque<const Sequence*> running;  // the plain list, in arrival order
  uint64_t next_id = 0;
  for (; next_id < 150; ++next_id) running.push_back(bench.add(next_id));
  bench.step();  // all admitted (prefill)
  std::mt19937_64 rng(5);
  // Which places finish in each round, by kind; most rounds take a few at
  // the front (the oldest finish first), so the head passes the entries
  // and they go back to the start of their storage several times.
  enum Kind { front, middle, back, front_and_back, spread, all };
  for (int round = 0; round < 400; ++round) {
    const size_t n = running.size();
    const Kind kind = round % 23 == 22 ? all : static_cast<Kind>(rng() % 5);
    std::vector<size_t> places;
    auto take = [&](size_t p) {
      if (p < n) places.push_back(p);
    };
    switch (kind) {
      case front:
        for (size_t p = 0, k = 1 + rng() % 4; p < k; ++p) take(rng() % 8);
        break;
      case middle:
        take(n / 2);
        take(n / 2 + 1 + rng() % 5);
        break;
      case back:
        take(n - 1);
        take(n - 2 - rng() % 3);
        break;
      case front_and_back:
        take(rng() % 3);
        take(n - 1 - rng() % 3);
        break;
      case spread:
        for (int k = 0; k < 6; ++k) take(rng() % n);
        break;
      case all:
        for (size_t p = 0; p < n; ++p) take(p);
        break;
    }
    std::sort(places.begin(), places.end());
    places.erase(std::unique(places.begin(), places.end()), places.end());
    for (auto it = places.rbegin(); it != places.rend(); ++it) {
      bench.scheduler.finish(const_cast<Sequence*>(running[*it]));
      running.erase(running.begin() + static_cast<std::ptrdiff_t>(*it));
    }
    // New arrivals join at the back, fewer than left on average so that
    // the set shrinks and grows.
    const size_t joins = running.empty() ? 40 : rng() % 5;
    for (size_t k = 0; k < joins; ++k) running.push_back(bench.add(next_id++));
    const std::vector<const Sequence*> order = bench.step();
    ASSERT_EQ(bench.scheduler.num_running(), running.size()) << "round " << round;
    ASSERT_EQ(order, std::vector<const Sequence*>(running.begin(), running.end()))
        << "round " << round << " kind " << kind;
  }
  for (const Sequence* seq : running) bench.scheduler.finish(const_cast<Sequence*>(seq));
  bench.step();
  EXPECT_EQ(bench.scheduler.num_running(), 0U);
  bench.policy.check_drained();
}

// The same sequences in bulk and one by one, finished at the same places
// between steps (settled first, as the engine finishes only sequences it
// sees as items): whenever settled, every sequence's tokens and commit
// horizon agree, and so do the policies' counts.
template <class Policy>
void expect_bulk_steps_go_on_through_finishes() {
  Bench<Policy> one_by_one(/*bulk=*/false);
  Bench<Policy> in_bulk(/*bulk=*/true);
  std::vector<size_t> running;  // indices into the benches' seqs, arrival order
  size_t next = 0;
  for (; next < 120; ++next) {
    one_by_one.add(next);
    in_bulk.add(next);
    running.push_back(next);
  }
  std::mt19937_64 rng(9);
  int64_t bulk_commits = 0;
  for (int round = 0; round < 400; ++round) {
    one_by_one.step();
    in_bulk.step();
    bulk_commits += static_cast<int64_t>(in_bulk.batch.summary.bulk_commits.size());
    // Every fourth step the sequences are settled, compared and some
    // finish; in between the runs go on through their events.
    if (round % 4 != 3) continue;
    in_bulk.scheduler.settle_all();
    for (const size_t k : running) {
      const Sequence& a = *one_by_one.seqs[k];
      const Sequence& b = *in_bulk.seqs[k];
      ASSERT_EQ(a.computed, b.computed) << "round " << round << " seq " << k;
      ASSERT_EQ(a.generated, b.generated) << "round " << round << " seq " << k;
      ASSERT_EQ(a.commit_horizon, b.commit_horizon) << "round " << round << " seq " << k;
      // The policy's count of its tokens too, which a bulk commit of
      // PagedPolicy leaves to the next settle.
      ASSERT_EQ(one_by_one.policy.in_place_room(a.slot), in_bulk.policy.in_place_room(b.slot))
          << "round " << round << " seq " << k;
    }
    const CacheAccounting x = one_by_one.policy.accounting();
    const CacheAccounting y = in_bulk.policy.accounting();
    ASSERT_EQ(x.blocks_used, y.blocks_used) << "round " << round;
    ASSERT_EQ(x.slots_reserved, y.slots_reserved) << "round " << round;
    ASSERT_EQ(x.tokens_held, y.tokens_held) << "round " << round;
    // Mostly near the front, now and then anywhere.
    const size_t gone = 1 + rng() % 3;
    for (size_t g = 0; g < gone && !running.empty(); ++g) {
      const size_t place = std::min(running.size() - 1,
                                    static_cast<size_t>(round % 7 == 6 ? rng() % 200 : rng() % 6));
      one_by_one.scheduler.finish(one_by_one.seqs[running[place]].get());
      in_bulk.scheduler.finish(in_bulk.seqs[running[place]].get());
      running.erase(running.begin() + static_cast<std::ptrdiff_t>(place));
    }
    for (size_t k = rng() % 3; k > 0; --k, ++next) {
      one_by_one.add(next);
      in_bulk.add(next);
      running.push_back(next);
    }
  }
  EXPECT_GT(bulk_commits, 1000);  // the runs went through block fills
  EXPECT_GT(in_bulk.scheduler.num_running(), 0U);
}

TEST(SchedulerRunningSet, BulkStepsGoOnThroughFinishesAtTheFront) {
  expect_bulk_steps_go_on_through_finishes<PagedPolicy>();
}

TEST(SchedulerRunningSet, BulkStepsOverAPolicyAskedThroughTheInterfaceGoOnThroughFinishes) {
  expect_bulk_steps_go_on_through_finishes<PagedWindowPolicy>();
}

}  // namespace
}  // namespace kvsim::KVSIM_TEST_FILE_SCOPE
