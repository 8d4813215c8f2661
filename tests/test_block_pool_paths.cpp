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

namespace kvsim {
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
}  // namespace kvsim
