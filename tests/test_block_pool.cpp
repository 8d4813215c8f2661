// BlockPool: reference counts, hash map, and vLLM-style LRU reuse of freed
// cached blocks.
#include <gtest/gtest.h>

#include <random>
#include <string>
#include <vector>

#include "sim/cache/block_pool.hpp"
#include "sim/cache/eviction/eviction_registry.hpp"
#include "sim/cache/recycled_index.hpp"

namespace kvsim::KVSIM_TEST_FILE_SCOPE {
namespace {

BlockHash h(uint64_t v) {
  return {v, ~v};
}

TEST(BlockPool, AllocatesInIdOrderFromAFreshPool) {
  BlockPool pool({4});
  EXPECT_EQ(pool.num_free(), 4);
  EXPECT_EQ(pool.allocate(), 0);
  EXPECT_EQ(pool.allocate(), 1);
  EXPECT_EQ(pool.num_free(), 2);
  EXPECT_EQ(pool.num_used(), 2);
  pool.check_invariants();
}

TEST(BlockPool, FreedBlocksGoToTheTailAndAreReusedLeastRecentlyFreedFirst) {
  BlockPool pool({4});
  std::vector<BlockId> b;
  for (int i = 0; i < 4; ++i) b.push_back(pool.allocate());
  pool.release(b[2]);
  pool.release(b[0]);
  pool.release(b[3]);
  EXPECT_EQ(pool.free_queue(), (std::vector<BlockId>{2, 0, 3}));
  EXPECT_EQ(pool.allocate(), 2);
  EXPECT_EQ(pool.allocate(), 0);
  EXPECT_EQ(pool.allocate(), 3);
  pool.check_invariants();
}

TEST(BlockPool, FreedCachedBlockKeepsItsHashUntilReused) {
  BlockPool pool({2});
  const BlockId a = pool.allocate();
  pool.register_hash(a, h(7));
  pool.release(a);
  EXPECT_EQ(pool.lookup(h(7)), a);  // still revivable
  EXPECT_EQ(pool.num_cached_free(), 1);
  pool.touch(a);  // a prefix hit takes it out of the free queue
  EXPECT_EQ(pool.ref_count(a), 1);
  EXPECT_EQ(pool.num_free(), 1);
  pool.release(a);
  // Allocation goes through the free queue head: block 1 (never used) first,
  // then the cached one, whose hash is evicted.
  EXPECT_EQ(pool.allocate(), 1);
  EXPECT_EQ(pool.evictions(), 0u);
  EXPECT_EQ(pool.allocate(), a);
  EXPECT_EQ(pool.evictions(), 1u);
  EXPECT_EQ(pool.lookup(h(7)), kNoBlock);
  pool.check_invariants();
}

TEST(BlockPool, SharedBlockReturnsToThePoolOnlyAtTheLastReference) {
  BlockPool pool({2});
  const BlockId a = pool.allocate();
  pool.touch(a);
  EXPECT_EQ(pool.ref_count(a), 2);
  pool.release(a);
  EXPECT_EQ(pool.num_free(), 1);
  pool.release(a);
  EXPECT_EQ(pool.num_free(), 2);
  EXPECT_THROW(pool.release(a), std::logic_error);  // never negative
}

TEST(BlockPool, DuplicateContentKeepsTheFirstBlockCanonical) {
  BlockPool pool({3});
  const BlockId a = pool.allocate();
  const BlockId b = pool.allocate();
  pool.register_hash(a, h(1));
  pool.register_hash(b, h(1));
  EXPECT_EQ(pool.lookup(h(1)), a);
  EXPECT_FALSE(pool.has_hash(b));
}

TEST(BlockPool, RandomOperationsKeepInvariants) {
  BlockPool pool({64});
  std::mt19937 rng(7);
  std::vector<BlockId> held;
  for (int step = 0; step < 20000; ++step) {
    const int op = static_cast<int>(rng() % 4);
    if (op == 0 && pool.num_free() > 0) {
      held.push_back(pool.allocate());
      pool.register_hash(held.back(), h(rng() % 40));
    } else if (op == 1 && !held.empty()) {
      const size_t i = rng() % held.size();
      pool.release(held[i]);
      held.erase(held.begin() + static_cast<long>(i));
    } else if (op == 2) {
      const BlockId found = pool.lookup(h(rng() % 40));
      if (found != kNoBlock) {
        pool.touch(found);
        held.push_back(found);
      }
    }
    if (step % 997 == 0) pool.check_invariants();
  }
  for (BlockId b : held) pool.release(b);
  pool.check_invariants();
  EXPECT_EQ(pool.num_free(), 64);
}

// allocate_into names all its victims before taking them: the blocks, their
// order, the evicted hashes and the pool's state must be those of one
// allocate() call after another, under every eviction order.
TEST(BlockPool, AllocateIntoMatchesOneAllocateAfterAnother) {
  for (const std::string& order : eviction_order_names()) {
    SCOPED_TRACE(order);
    BlockPool one({48, order});
    BlockPool many({48, order});
    std::mt19937 rng(11);
    std::vector<BlockId> held_one, held_many;
    for (int round = 0; round < 300; ++round) {
      const int64_t want = static_cast<int64_t>(rng() % 6);
      if (want <= one.num_free()) {
        for (int64_t i = 0; i < want; ++i) held_one.push_back(one.allocate());
        many.allocate_into(want, held_many);
        ASSERT_EQ(held_one, held_many);
        for (size_t i = held_one.size() - static_cast<size_t>(want); i < held_one.size(); ++i) {
          const BlockHash content = h(rng() % 30);
          one.register_hash(held_one[i], content);
          many.register_hash(held_many[i], content);
        }
      }
      while (held_one.size() > 20 || (!held_one.empty() && rng() % 3 == 0)) {
        const size_t i = rng() % held_one.size();
        one.release(held_one[i]);
        many.release(held_many[i]);
        held_one.erase(held_one.begin() + static_cast<long>(i));
        held_many.erase(held_many.begin() + static_cast<long>(i));
      }
      const BlockHash probe = h(rng() % 30);
      ASSERT_EQ(one.lookup(probe), many.lookup(probe));
      ASSERT_EQ(one.evictions(), many.evictions());
      ASSERT_EQ(one.free_queue(), many.free_queue());
    }
    many.check_invariants();
  }
}

// The handles of slots, chains and chunks: the last freed index first,
// else a new entry at the end.
TEST(RecycledIndex, ReusesTheLastFreedIndexThenAppends) {
  std::vector<std::string> entries;
  std::vector<int32_t> free_indices;
  EXPECT_EQ(take_recycled_index(entries, free_indices), 0);
  EXPECT_EQ(take_recycled_index(entries, free_indices), 1);
  EXPECT_EQ(take_recycled_index(entries, free_indices), 2);
  entries[1] = "kept";
  free_indices = {2, 1};
  EXPECT_EQ(take_recycled_index(entries, free_indices), 1);
  EXPECT_EQ(entries[1], "kept");  // the caller resets a reused entry
  EXPECT_EQ(take_recycled_index(entries, free_indices), 2);
  EXPECT_EQ(take_recycled_index(entries, free_indices), 3);
  EXPECT_EQ(entries.size(), 4u);
  EXPECT_TRUE(free_indices.empty());
}

}  // namespace
}  // namespace kvsim::KVSIM_TEST_FILE_SCOPE
