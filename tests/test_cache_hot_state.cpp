// The state a saturated decode batch reads at every step, kept small: the
// `lru` order's ring (gone entries marked in place, dropped in place or by
// doubling when it fills), the victims it lends the pool for prefetching,
// the pool's single-block allocation and its invariant check by id, and a
// paged sequence's room record (token count and table capacity) beside its
// block table.
#include <gtest/gtest.h>

#include <algorithm>
#include <memory>
#include <numeric>
#include <random>
#include <vector>

#include "sim/cache/block_pool.hpp"
#include "sim/cache/eviction/eviction_registry.hpp"
#include "sim/cache/paged_policy.hpp"

namespace kvsim::KVSIM_TEST_FILE_SCOPE {
namespace {

BlockHash h(uint64_t v) {
  return {v, ~v};
}

// Which of [0, ids) a list holds, as evictable_flags() says it.
std::vector<uint8_t> flags_of(const std::vector<EvictableId>& list, int64_t ids) {
  std::vector<uint8_t> flags(static_cast<size_t>(ids), 0);
  for (EvictableId id : list) flags[static_cast<size_t>(id)] = 1;
  return flags;
}

// A pool-like rotation over many wraps of the ring: victims come off the
// oldest end and go back at the newest, while hits mark entries gone in the
// middle (a ring full of them drops them in place, its live entries
// straddling the wrap) and pins shrink and refill the set (the ring
// doubles). A plain list kept by erase and append says what it must be.
TEST(LruRing, KeepsTheOrderOverManyWrapsWithGoneEntriesDroppedInPlace) {
  auto lru = make_eviction_order("lru");
  constexpr int64_t kIds = 300;
  lru->reserve(40);  // a small ring: it wraps, fills and grows
  std::vector<EvictableId> list;
  std::vector<EvictableId> out;  // ids not evictable
  for (EvictableId id = 0; id < kIds; ++id) {
    if (id < 100) {
      lru->on_evictable(id);
      list.push_back(id);
    } else {
      out.push_back(id);
    }
  }
  std::mt19937 rng(11);
  for (int step = 0; step < 60000; ++step) {
    // Phases of mostly hits fill the ring with gone entries.
    const bool hits = (step / 3000) % 2 == 1;
    const uint32_t op = rng() % 16;
    if (op < (hits ? 1u : 9u) && !list.empty()) {  // a victim, freed again at once
      const EvictableId v = lru->pop_victim();
      ASSERT_EQ(v, list.front()) << "step " << step;
      list.erase(list.begin());
      lru->on_evictable(v);
      list.push_back(v);
    } else if (op < (hits ? 14u : 13u) && !list.empty()) {  // a hit: to the newest end
      const EvictableId id = list[rng() % list.size()];
      lru->on_access(id);
      list.erase(std::find(list.begin(), list.end(), id));
      list.push_back(id);
    } else if (op < 14 && !list.empty()) {  // revived by a hit
      const size_t at = rng() % list.size();
      lru->on_pinned(list[at]);
      out.push_back(list[at]);
      list.erase(list.begin() + static_cast<std::ptrdiff_t>(at));
    } else if (!out.empty()) {  // freed
      const size_t at = rng() % out.size();
      lru->on_evictable(out[at]);
      list.push_back(out[at]);
      out.erase(out.begin() + static_cast<std::ptrdiff_t>(at));
    }
    ASSERT_EQ(lru->next_victim(), list.empty() ? kNoEvictable : list.front()) << "step " << step;
    if (step % 101 == 0) {
      ASSERT_EQ(lru->victims_in_order(), list) << "step " << step;
      ASSERT_EQ(lru->evictable_flags(kIds), flags_of(list, kIds)) << "step " << step;
    }
  }
}

// The victims lent for prefetching: with no entry gone, the coming victims
// in order up to where the ring wraps; a gone entry reads kNoEvictable;
// nothing when no entry is evictable.
TEST(LruRing, LendsTheComingVictimsUpToTheWrap) {
  auto lru = make_eviction_order("lru");
  EXPECT_TRUE(lru->victims_ahead().empty());
  lru->reserve(10);
  for (EvictableId id = 0; id < 50; ++id) lru->on_evictable(id);
  // Rotate so that the live entries straddle the end of the array.
  for (int i = 0; i < 1000; ++i) lru->on_evictable(lru->pop_victim());
  for (int i = 0; i < 200; ++i) {
    const std::vector<EvictableId> order = lru->victims_in_order();
    const std::span<const EvictableId> ahead = lru->victims_ahead();
    ASSERT_FALSE(ahead.empty());
    ASSERT_LE(ahead.size(), order.size());
    ASSERT_TRUE(std::equal(ahead.begin(), ahead.end(), order.begin())) << "rotation " << i;
    lru->on_evictable(lru->pop_victim());
  }
  const std::vector<EvictableId> order = lru->victims_in_order();
  const std::span<const EvictableId> before = lru->victims_ahead();
  ASSERT_GE(before.size(), 2u);
  const EvictableId second = before[1];
  lru->on_pinned(second);
  EXPECT_EQ(lru->victims_ahead()[0], order[0]);
  EXPECT_EQ(lru->victims_ahead()[1], kNoEvictable);
  EXPECT_EQ(lru->victim_ahead(1), kNoEvictable);
  EXPECT_EQ(lru->pop_victim(), order[0]);
  EXPECT_EQ(lru->pop_victim(), order[2]);  // the gone entry is skipped
  while (!lru->victims_in_order().empty()) lru->pop_victim();
  EXPECT_TRUE(lru->victims_ahead().empty());
}

// Forwards to `lru`, but can forget a freed block or keep a revived one:
// the pool's invariant check must tell both.
class ForgetfulOrder final : public EvictionOrder {
 public:
  ForgetfulOrder() : inner_(make_eviction_order("lru")) {}
  std::string_view name() const override { return "forgetful"; }
  void on_evictable(EvictableId id) override {
    if (id == forget_freed) return;
    inner_->on_evictable(id);
  }
  void on_pinned(EvictableId id) override {
    if (id == keep_pinned) return;
    inner_->on_pinned(id);
  }
  void on_access(EvictableId id) override { inner_->on_access(id); }
  EvictableId pop_victim() override { return inner_->pop_victim(); }
  std::vector<EvictableId> victims_in_order() const override {
    std::vector<EvictableId> v = inner_->victims_in_order();
    if (list_twice != kNoEvictable) v.push_back(list_twice);
    return v;
  }
  EvictableId forget_freed = kNoEvictable;
  EvictableId keep_pinned = kNoEvictable;
  EvictableId list_twice = kNoEvictable;

 private:
  std::unique_ptr<EvictionOrder> inner_;
};

TEST(BlockPoolCheck, TellsAnOrderThatMissesAFreeBlockOrHoldsAUsedOne) {
  {
    auto order = std::make_unique<ForgetfulOrder>();
    ForgetfulOrder* o = order.get();
    BlockPool pool({4}, std::move(order));
    const BlockId a = pool.allocate();
    pool.allocate();
    pool.check_invariants();
    o->forget_freed = a;
    pool.release(a);  // free, but not in the order
    EXPECT_THROW(pool.check_invariants(), std::logic_error);
  }
  {
    auto order = std::make_unique<ForgetfulOrder>();
    ForgetfulOrder* o = order.get();
    BlockPool pool({4}, std::move(order));
    const BlockId a = pool.allocate();
    pool.register_hash(a, h(1));
    pool.release(a);
    o->keep_pinned = a;
    pool.touch(pool.lookup(h(1)));  // in use, still in the order
    EXPECT_THROW(pool.check_invariants(), std::logic_error);
  }
  for (const EvictableId twice : {1, 9}) {  // listed twice; out of range
    auto order = std::make_unique<ForgetfulOrder>();
    ForgetfulOrder* o = order.get();
    BlockPool pool({4}, std::move(order));
    pool.check_invariants();
    o->list_twice = twice;
    EXPECT_THROW(pool.check_invariants(), std::logic_error) << twice;
  }
}

// A decode's new block (allocate_into of one) is the block allocate() would
// take, with the same evictions, hashes dropped and free queue after.
TEST(BlockPoolOneBlock, AllocatesAsAllocateDoes) {
  BlockPool one({64});
  BlockPool each({64});
  std::vector<BlockId> table;
  std::vector<BlockId> held_one;
  std::vector<BlockId> held_each;
  std::mt19937 rng(5);
  for (int step = 0; step < 5000; ++step) {
    const uint32_t op = rng() % 8;
    if (op < 4 && one.num_free() > 0) {
      one.allocate_into(1, table);
      const BlockId b = each.allocate();
      ASSERT_EQ(table.back(), b) << "step " << step;
      const BlockHash content = h(rng() % 200);
      one.register_hash(b, content);
      each.register_hash(b, content);
      held_one.push_back(b);
      held_each.push_back(b);
    } else if (op < 7 && !held_one.empty()) {
      const size_t at = rng() % held_one.size();
      one.release(held_one[at]);
      each.release(held_each[at]);
      held_one.erase(held_one.begin() + static_cast<std::ptrdiff_t>(at));
      held_each.erase(held_each.begin() + static_cast<std::ptrdiff_t>(at));
    } else {  // a prefix hit
      const BlockHash content = h(rng() % 200);
      const BlockId hit = one.lookup(content);
      ASSERT_EQ(hit, each.lookup(content));
      if (hit == kNoBlock) continue;
      one.touch(hit);
      each.touch(hit);
      held_one.push_back(hit);
      held_each.push_back(hit);
    }
    ASSERT_EQ(one.evictions(), each.evictions()) << "step " << step;
    ASSERT_EQ(one.num_cached_free(), each.num_cached_free()) << "step " << step;
  }
  EXPECT_EQ(one.free_queue(), each.free_queue());
  one.check_invariants();
}

// A finished sequence's table released in windows is the table released
// one block at a time from its tail: the same free queue (shared blocks
// freed only at their last reference, released entries skipped), and a
// block already free is an error with the releases before it standing.
TEST(BlockPoolReleaseBackwards, IsReleaseOfEachFromTheTail) {
  BlockPool windows({64});
  BlockPool each({64});
  std::vector<BlockId> table;
  for (int i = 0; i < 40; ++i) {  // more than two windows
    table.push_back(windows.allocate());
    each.allocate();
    windows.register_hash(table.back(), h(static_cast<uint64_t>(i % 3 == 0 ? i : 1000 + i)));
    each.register_hash(table.back(), h(static_cast<uint64_t>(i % 3 == 0 ? i : 1000 + i)));
  }
  for (const size_t shared : {3u, 17u, 33u}) {  // held by another sequence too
    windows.touch(table[shared]);
    each.touch(table[shared]);
  }
  for (size_t i = 0; i < 5; ++i) table[i] = kNoBlock;  // left a sliding window
  windows.release_backwards(table);
  for (size_t i = table.size(); i-- > 0;)
    if (table[i] != kNoBlock) each.release(table[i]);
  EXPECT_EQ(windows.free_queue(), each.free_queue());
  EXPECT_EQ(windows.num_free(), each.num_free());
  EXPECT_EQ(windows.num_cached_free(), each.num_cached_free());
  windows.check_invariants();
  // Block 20 is free now: releasing [17, 20, 33] frees 33, then fails.
  EXPECT_THROW(windows.release_backwards(std::vector<BlockId>{17, 20, 33}), std::logic_error);
  EXPECT_EQ(windows.ref_count(33), 0);
  EXPECT_EQ(windows.ref_count(17), 1);
  windows.check_invariants();
}

// A sequence's room record follows its table: the room of its last block,
// how many blocks a growth needs, through growth in place and by a block,
// a swap out and in, and a slot reused after a release.
TEST(SeqRoom, FollowsTheTableThroughGrowthSwapAndRelease) {
  constexpr int64_t kBlock = 4;
  PagedParams params;
  params.num_blocks = 16;
  params.block_size = kBlock;
  params.block_bytes = 1;
  params.prefix_caching = false;
  params.host_blocks = 16;
  PagedPolicy p(params);
  std::vector<int32_t> prompt(9);
  std::iota(prompt.begin(), prompt.end(), 1);
  const TokenView view{prompt.data(), 9, nullptr, 0};
  const SeqSlot s = p.apply_admit(p.plan_admit(p.lookup_prefix(view), 9));
  auto expect_room = [&](SeqSlot slot, int64_t tokens) {
    const auto capacity = static_cast<int64_t>(p.block_table(slot).size()) * kBlock;
    EXPECT_EQ(p.in_place_room(slot), capacity - tokens);
    // A growth just past the room takes one block; a block more, two.
    const int64_t room = capacity - tokens;
    EXPECT_EQ(p.plan_grow(slot, room).new_blocks, 0);
    EXPECT_EQ(p.plan_grow(slot, room + 1).new_blocks, 1);
    EXPECT_EQ(p.plan_grow(slot, room + kBlock).new_blocks, 1);
    EXPECT_EQ(p.plan_grow(slot, room + kBlock + 1).new_blocks, 2);
    EXPECT_EQ(p.plan_grow(slot, room + 3 * kBlock + 1).new_blocks, 4);
  };
  expect_room(s, 9);  // 3 blocks, 12 slots
  EXPECT_TRUE(p.grow_in_place(s, 2));
  expect_room(s, 11);
  p.grow_in_place_bulk(1);
  p.settle_in_place(s, 1);
  expect_room(s, 12);
  EXPECT_FALSE(p.grow_in_place(s, 1));
  EXPECT_THROW(p.settle_in_place(s, 1), std::logic_error);
  p.apply_grow(s, p.plan_grow(s, 1), 1);  // a decode crossing into block 4
  EXPECT_EQ(p.block_table(s).size(), 4u);
  expect_room(s, 13);
  p.apply_grow(s, p.plan_grow(s, 8), 8);  // a chunk: 2 more blocks
  EXPECT_EQ(p.block_table(s).size(), 6u);
  expect_room(s, 21);
  const HostSlot host = p.apply_swap_out(s, p.plan_swap_out(s));
  const SeqSlot back = p.apply_swap_in(host, p.plan_swap_in(host));
  expect_room(back, 21);
  EXPECT_EQ(p.accounting().tokens_held, 21);
  p.release(back);
  // The slot is reused with a room of its own.
  const SeqSlot again = p.apply_admit(p.plan_admit(p.lookup_prefix(view), 9));
  expect_room(again, 9);
  EXPECT_EQ(p.accounting().tokens_held, 9);
  p.release(again);
  p.check_drained();
}

}  // namespace
}  // namespace kvsim::KVSIM_TEST_FILE_SCOPE
