// The block pool's short paths under `lru` (the order's calls made inline,
// not through EvictionOrder) against the general ones: a pool whose order is
// `lru` behind the virtual interface must make the same choices. And the
// invariant checks, written without a branch per block, must still name
// each fault they named before.
#include <gtest/gtest.h>

#include <algorithm>
#include <memory>
#include <random>
#include <string>
#include <vector>

#include "sim/cache/block_pool.hpp"
#include "sim/cache/eviction/eviction_registry.hpp"
#include "sim/cache/eviction/lru_order.hpp"

namespace kvsim::KVSIM_TEST_FILE_SCOPE {
namespace {

BlockHash h(uint64_t v) {
  return {v, ~v};
}

// `lru` seen only through EvictionOrder: the pool cannot tell it is `lru`,
// so it takes its general paths. `in_use` makes it list one more entry (a
// block that is referenced) in its flags.
class HiddenLru final : public EvictionOrder {
 public:
  HiddenLru() : inner_(make_eviction_order("lru")) {}
  std::string_view name() const override { return "hidden-lru"; }
  void on_evictable(EvictableId id) override { inner_->on_evictable(id); }
  void on_pinned(EvictableId id) override { inner_->on_pinned(id); }
  void on_access(EvictableId id) override { inner_->on_access(id); }
  EvictableId pop_victim() override { return inner_->pop_victim(); }
  void pop_victims(int64_t count, std::vector<EvictableId>& out) override {
    inner_->pop_victims(count, out);
  }
  std::span<const EvictableId> victims_ahead() const override { return inner_->victims_ahead(); }
  void on_evictable_range(EvictableId first, int64_t count) override {
    inner_->on_evictable_range(first, count);
  }
  void reserve(int64_t ids) override { inner_->reserve(ids); }
  bool uses_content() const override { return false; }
  std::vector<EvictableId> victims_in_order() const override { return inner_->victims_in_order(); }
  std::vector<uint8_t> evictable_flags(int64_t ids) const override {
    std::vector<uint8_t> flags = inner_->evictable_flags(ids);
    if (in_use != kNoEvictable) flags[static_cast<size_t>(in_use)] = 1;
    return flags;
  }
  EvictableId in_use = kNoEvictable;

 private:
  std::unique_ptr<EvictionOrder> inner_;
};

struct Held {
  std::vector<BlockId> blocks;
};

// Random allocations of one block and of many, releases one by one and of
// whole tables from the tail, hits, and pending marks: the pool on `lru`
// (short paths) and the pool on the hidden one (general paths) agree on
// every block, count and the free queue.
TEST(BlockPoolLruPaths, OneBlockAllocationAndReleaseAreTheGeneralPaths) {
  constexpr int64_t kBlocks = 96;
  BlockPool fast({kBlocks});
  BlockPool general({kBlocks}, std::make_unique<HiddenLru>());
  std::vector<Held> fast_seqs;
  std::vector<Held> general_seqs;
  std::mt19937 rng(17);
  for (int step = 0; step < 20000; ++step) {
    const uint32_t op = rng() % 16;
    if (op < 7 && fast.num_free() > 0) {  // a decode's new block, in a new or held table
      if (fast_seqs.empty() || rng() % 4 == 0) {
        fast_seqs.emplace_back();
        general_seqs.emplace_back();
      }
      const size_t s = rng() % fast_seqs.size();
      if (rng() % 2 == 0) {
        fast.allocate_into(1, fast_seqs[s].blocks);
        general_seqs[s].blocks.push_back(general.allocate());
      } else {
        fast_seqs[s].blocks.push_back(fast.allocate());
        general.allocate_into(1, general_seqs[s].blocks);
      }
      const BlockId b = fast_seqs[s].blocks.back();
      ASSERT_EQ(b, general_seqs[s].blocks.back()) << "step " << step;
      if (rng() % 3 == 0) {
        const BlockHash content = h(rng() % 300);
        fast.register_hash(b, content);
        general.register_hash(b, content);
      } else {
        // Through the pool, or through its arrays taken once (a step's fills).
        const auto tag = static_cast<uint32_t>(rng() % 5);
        const bool marked =
            rng() % 2 == 0 ? fast.mark_pending(b, tag) : fast.pending_marks().mark(b, tag);
        ASSERT_EQ(marked, general.mark_pending(b, tag));
        if (marked) {
          ASSERT_EQ(fast.pending_tag(b), tag);
        }
      }
    } else if (op < 9 && fast.num_free() > 8) {  // a prompt's blocks
      const int64_t count = 2 + static_cast<int64_t>(rng() % 7);
      fast_seqs.emplace_back();
      general_seqs.emplace_back();
      fast.allocate_into(count, fast_seqs.back().blocks);
      general.allocate_into(count, general_seqs.back().blocks);
      ASSERT_EQ(fast_seqs.back().blocks, general_seqs.back().blocks) << "step " << step;
    } else if (op < 12 && !fast_seqs.empty()) {  // a finished sequence
      const size_t s = rng() % fast_seqs.size();
      if (!fast_seqs[s].blocks.empty() && rng() % 3 == 0) {  // left a window behind
        fast.release(fast_seqs[s].blocks.front());
        general.release(general_seqs[s].blocks.front());
        fast_seqs[s].blocks.front() = kNoBlock;
        general_seqs[s].blocks.front() = kNoBlock;
      }
      fast.release_backwards(fast_seqs[s].blocks);
      general.release_backwards(general_seqs[s].blocks);
      fast_seqs.erase(fast_seqs.begin() + static_cast<std::ptrdiff_t>(s));
      general_seqs.erase(general_seqs.begin() + static_cast<std::ptrdiff_t>(s));
    } else {  // a prefix hit joins a held table
      const BlockHash content = h(rng() % 300);
      const BlockId hit = fast.lookup(content);
      ASSERT_EQ(hit, general.lookup(content));
      if (hit == kNoBlock || fast_seqs.empty()) continue;
      const size_t s = rng() % fast_seqs.size();
      fast.touch(hit);
      general.touch(hit);
      fast_seqs[s].blocks.push_back(hit);
      general_seqs[s].blocks.push_back(hit);
    }
    ASSERT_EQ(fast.num_free(), general.num_free()) << "step " << step;
    ASSERT_EQ(fast.num_cached_free(), general.num_cached_free()) << "step " << step;
    ASSERT_EQ(fast.evictions(), general.evictions()) << "step " << step;
    if (step % 97 == 0) {
      ASSERT_EQ(fast.free_queue(), general.free_queue()) << "step " << step;
      ASSERT_NO_THROW(fast.check_invariants()) << "step " << step;
      ASSERT_NO_THROW(general.check_invariants()) << "step " << step;
    }
  }
}

// Whole tables released from the tail under `lru` (requested two windows
// ahead) against the general path, at lengths around the windows' edges
// and far past them, with leading released entries, blocks another table
// shares (not freed) and cached ones: the same free queue, counts and
// checks.
TEST(BlockPoolLruPaths, LongTablesReleaseAsTheGeneralPath) {
  constexpr int64_t kBlocks = 2000;
  BlockPool fast({kBlocks});
  BlockPool general({kBlocks}, std::make_unique<HiddenLru>());
  std::mt19937 rng(29);
  std::vector<std::vector<BlockId>> tables;
  const int64_t lengths[] = {1, 15, 16, 17, 31, 32, 33, 34, 47, 48, 49, 64, 65, 100, 301};
  for (int round = 0; round < 40; ++round) {
    for (const int64_t length : lengths) {
      if (fast.num_free() < length) break;
      std::vector<BlockId> fast_table, general_table;
      fast.allocate_into(length, fast_table);
      general.allocate_into(length, general_table);
      ASSERT_EQ(fast_table, general_table) << "round " << round;
      for (const BlockId b : fast_table) {
        if (rng() % 3 != 0) continue;
        const BlockHash content = h(static_cast<uint64_t>(b) + 1000 * static_cast<uint64_t>(round));
        fast.register_hash(b, content);
        general.register_hash(b, content);
      }
      // Another table holds some of these blocks too.
      if (!tables.empty() && rng() % 2 == 0) {
        std::vector<BlockId>& other = tables[rng() % tables.size()];
        for (size_t i = 0; i < fast_table.size(); i += 1 + rng() % 5) {
          fast.touch(fast_table[i]);
          general.touch(fast_table[i]);
          other.push_back(fast_table[i]);
        }
      }
      // Leading entries a window released already.
      for (size_t i = 0; i < fast_table.size() && rng() % 4 == 0; ++i) {
        fast.release(fast_table[i]);
        general.release(fast_table[i]);
        fast_table[i] = kNoBlock;
      }
      tables.push_back(std::move(fast_table));
    }
    while (tables.size() > (round % 2 == 0 ? 3u : 0u)) {
      const size_t s = rng() % tables.size();
      fast.release_backwards(tables[s]);
      general.release_backwards(tables[s]);
      tables.erase(tables.begin() + static_cast<std::ptrdiff_t>(s));
      ASSERT_EQ(fast.num_free(), general.num_free()) << "round " << round;
      ASSERT_EQ(fast.num_cached_free(), general.num_cached_free()) << "round " << round;
    }
    ASSERT_EQ(fast.free_queue(), general.free_queue()) << "round " << round;
    ASSERT_NO_THROW(fast.check_invariants()) << "round " << round;
    ASSERT_NO_THROW(general.check_invariants()) << "round " << round;
  }
}

// A pool whose map starts small (expected_hashes) grows it as hashes are
// registered past that: every lookup, eviction and count is the answer of
// a pool whose map was sized for every block from the start.
TEST(BlockPoolMapSize, AMapSizedForFewHashesAnswersAsAFullOne) {
  constexpr int64_t kBlocks = 3000;
  BlockPool full({kBlocks});
  BlockPool small({kBlocks, "lru", 16});
  std::mt19937 rng(8);
  std::vector<std::vector<BlockId>> held;
  for (int step = 0; step < 400; ++step) {
    std::vector<BlockId> a, b;
    const int64_t count = 1 + static_cast<int64_t>(rng() % 40);
    if (full.num_free() < count) {
      const size_t s = rng() % held.size();
      full.release_backwards(held[s]);
      small.release_backwards(held[s]);
      held.erase(held.begin() + static_cast<std::ptrdiff_t>(s));
      continue;
    }
    full.allocate_into(count, a);
    small.allocate_into(count, b);
    ASSERT_EQ(a, b) << "step " << step;
    for (const BlockId block : a) {
      const BlockHash content = h(rng() % 20000);
      full.register_hash(block, content);
      small.register_hash(block, content);
    }
    for (int i = 0; i < 20; ++i) {
      const BlockHash content = h(rng() % 20000);
      ASSERT_EQ(full.lookup(content), small.lookup(content)) << "step " << step;
    }
    held.push_back(std::move(a));
    ASSERT_EQ(full.evictions(), small.evictions()) << "step " << step;
    ASSERT_EQ(full.num_cached_free(), small.num_cached_free()) << "step " << step;
  }
  EXPECT_GT(full.evictions(), 0u);
  EXPECT_NO_THROW(small.check_invariants());
}

// A release that meets a block with no reference stops there: the blocks
// released before it stand, counted, on both paths.
TEST(BlockPoolLruPaths, AReleaseOfAFreeBlockThrowsWithTheEarlierReleasesCounted) {
  BlockPool fast({200});
  BlockPool general({200}, std::make_unique<HiddenLru>());
  for (BlockPool* pool : {&fast, &general}) {
    std::vector<BlockId> table;
    pool->allocate_into(80, table);
    pool->release(table[10]);  // free already: the release from the tail stops there
    EXPECT_THROW(pool->release_backwards(table), std::logic_error);
    EXPECT_EQ(pool->num_free(), 200 - 10);
    EXPECT_NO_THROW(pool->check_invariants());
  }
  EXPECT_EQ(fast.free_queue(), general.free_queue());
}

// The appender a release uses: the ids it pushes come out as on_evictable()
// one by one would have queued them, when the ring must first drop its
// gone entries or grow to take them all.
TEST(LruOrderFreedAppender, QueuesAsOnEvictableDoesThroughCompactionAndGrowth) {
  LruOrder fast;
  LruOrder each;
  for (LruOrder* o : {&fast, &each}) {
    o->reserve(40);
    o->on_evictable_range(0, 440);  // a ring of 512 places
  }
  std::mt19937 rng(3);
  std::vector<EvictableId> out;  // not evictable
  for (int round = 0; round < 300; ++round) {
    // Take some victims, revive some entries (gone places in the ring), then
    // free a batch through the appender.
    const int victims = static_cast<int>(rng() % 60);
    for (int i = 0; i < victims && !each.victims_in_order().empty(); ++i) {
      const EvictableId v = each.pop_victim();
      ASSERT_EQ(fast.pop_victim(), v);
      out.push_back(v);
    }
    const std::vector<EvictableId> order = each.victims_in_order();
    for (int i = 0; i < 10 && !order.empty(); ++i) {
      const EvictableId id = order[rng() % order.size()];
      if (std::find(out.begin(), out.end(), id) != out.end()) continue;
      each.on_pinned(id);
      fast.on_pinned(id);
      out.push_back(id);
    }
    std::shuffle(out.begin(), out.end(), rng);
    const size_t freed = std::min<size_t>(out.size(), rng() % 120);
    {
      LruOrder::FreedAppender appender(fast, freed);
      for (size_t i = 0; i < freed; ++i) appender.push(out[i]);
    }
    for (size_t i = 0; i < freed; ++i) each.on_evictable(out[i]);
    out.erase(out.begin(), out.begin() + static_cast<std::ptrdiff_t>(freed));
    ASSERT_EQ(fast.victims_in_order(), each.victims_in_order()) << "round " << round;
    ASSERT_EQ(fast.evictable_flags(440), each.evictable_flags(440)) << "round " << round;
  }
}

// The pool's check names the first block the order lists though it is in
// use, wherever it lies among many.
TEST(BlockPoolCheck, NamesTheBlockInUseThatTheOrderLists) {
  for (const EvictableId listed : {0, 37, 999}) {
    auto order = std::make_unique<HiddenLru>();
    HiddenLru* o = order.get();
    BlockPool pool({1000}, std::move(order));
    std::vector<BlockId> all;
    pool.allocate_into(1000, all);
    pool.release_backwards(std::span<const BlockId>(all).subspan(0, 500));
    pool.check_invariants();
    o->in_use = listed < 500 ? 500 + listed : listed;  // a block still held
    try {
      pool.check_invariants();
      ADD_FAILURE() << "no fault found for block " << o->in_use;
    } catch (const std::logic_error& e) {
      EXPECT_NE(std::string(e.what()).find("holds block " + std::to_string(o->in_use) + ","),
                std::string::npos)
          << e.what();
    }
  }
}

// The pass a pool's check makes beside its states visits exactly the flags
// evictable_flags() gives, in id order, ids past the order's included.
TEST(LruOrderFlags, TheVisitSeesTheFlagsInIdOrder) {
  LruOrder lru;
  lru.reserve(100);
  for (EvictableId id = 0; id < 100; id += 2) lru.on_evictable(id);
  lru.on_pinned(40);
  (void)lru.pop_victim();
  std::vector<uint8_t> seen;
  lru.visit_evictable(130, [&](size_t id, uint32_t listed) {
    EXPECT_EQ(id, seen.size());
    seen.push_back(static_cast<uint8_t>(listed));
  });
  EXPECT_EQ(seen, lru.evictable_flags(130));
  EXPECT_THROW(lru.visit_evictable(50, [](size_t, uint32_t) {}), std::logic_error);
}

// `lru`'s flags by id: an entry at or past `ids` is named, wherever it lies,
// and the flags are exactly the queued entries otherwise.
TEST(LruOrderFlags, NameAnEntryOutsideTheIdsAndFlagExactlyTheQueued) {
  LruOrder lru;
  lru.reserve(200);
  for (EvictableId id = 0; id < 200; id += 3) lru.on_evictable(id);
  lru.on_pinned(99);
  const std::vector<uint8_t> flags = lru.evictable_flags(200);
  for (EvictableId id = 0; id < 200; ++id)
    EXPECT_EQ(flags[static_cast<size_t>(id)], id % 3 == 0 && id != 99 ? 1 : 0) << id;
  try {
    (void)lru.evictable_flags(150);
    ADD_FAILURE() << "an entry past the ids went unnoticed";
  } catch (const std::logic_error& e) {
    EXPECT_NE(std::string(e.what()).find("entry 150,"), std::string::npos) << e.what();
  }
  EXPECT_EQ(lru.evictable_flags(199).size(), 199u);  // 198 is the last queued
  EXPECT_THROW((void)lru.evictable_flags(198), std::logic_error);
}

}  // namespace
}  // namespace kvsim::KVSIM_TEST_FILE_SCOPE
