// Eviction orders: the registry, `lru` on hand-built sequences for both
// pools (the block pool's free queue, seed 003's chunk LRU), the calls a
// pool makes to its order, and an order defined here (most recently used
// first) plugged into both pools to show that another order is one class
// and changes the victims exactly as it should.
#include <gtest/gtest.h>

#include <algorithm>
#include <memory>
#include <random>
#include <string>
#include <vector>

#include "scenario_helpers.hpp"
#include "sim/cache/block_pool.hpp"
#include "sim/cache/chunk_lru_policy.hpp"
#include "sim/cache/chunk_pool.hpp"
#include "sim/cache/eviction/eviction_registry.hpp"
#include "sim/cache/paged_policy.hpp"
#include "sim/policies/chunk_lru_spec.hpp"

namespace kvsim::KVSIM_TEST_FILE_SCOPE {
namespace {

BlockHash h(uint64_t v) {
  return {v, ~v};
}

// Most recently freed or used first: the opposite end of `lru`. Written the
// way an LFU or S3-FIFO would be: one class, nothing else to change.
class MruOrder final : public EvictionOrder {
 public:
  std::string_view name() const override { return "mru"; }
  void on_evictable(EvictableId id) override { stack_.push_back(id); }
  void on_pinned(EvictableId id) override { stack_.erase(find(id)); }
  void on_access(EvictableId id) override {
    auto it = std::find(stack_.begin(), stack_.end(), id);
    if (it == stack_.end()) return;
    stack_.erase(it);
    stack_.push_back(id);
  }
  EvictableId pop_victim() override {
    const EvictableId id = stack_.back();
    stack_.pop_back();
    return id;
  }
  std::vector<EvictableId> victims_in_order() const override {
    return {stack_.rbegin(), stack_.rend()};
  }

 private:
  std::vector<EvictableId>::iterator find(EvictableId id) {
    auto it = std::find(stack_.begin(), stack_.end(), id);
    if (it == stack_.end()) throw std::logic_error("mru order: entry not evictable");
    return it;
  }
  std::vector<EvictableId> stack_;  // back: most recent
};

// Forwards to `lru` and writes down every call the pool makes.
class RecordingOrder final : public EvictionOrder {
 public:
  explicit RecordingOrder(std::vector<std::string>* log)
      : inner_(make_eviction_order("lru")), log_(log) {}
  std::string_view name() const override { return "recording"; }
  void on_evictable(EvictableId id) override {
    note("evictable", id);
    inner_->on_evictable(id);
  }
  void on_pinned(EvictableId id) override {
    note("pinned", id);
    inner_->on_pinned(id);
  }
  void on_access(EvictableId id) override {
    note("access", id);
    inner_->on_access(id);
  }
  EvictableId pop_victim() override {
    const EvictableId id = inner_->pop_victim();
    note("victim", id);
    return id;
  }
  std::vector<EvictableId> victims_in_order() const override { return inner_->victims_in_order(); }

 private:
  void note(const char* what, EvictableId id) { log_->push_back(what + std::to_string(id)); }
  std::unique_ptr<EvictionOrder> inner_;
  std::vector<std::string>* log_;
};

TEST(EvictionRegistry, ListsEveryOrderWithItsInfo) {
  EXPECT_EQ(eviction_order_names(), (std::vector<std::string>{"arc", "lfu", "lru", "s3fifo"}));
  const auto infos = eviction_order_infos();
  ASSERT_EQ(infos.size(), 4u);
  for (const auto& info : infos) {
    EXPECT_EQ(info.kind, "eviction order");
    EXPECT_FALSE(info.doc.empty());
  }
  EXPECT_EQ(infos[2].name, "lru");
  EXPECT_TRUE(infos[2].params.empty());  // lru has no parameters
  for (const std::string& name : eviction_order_names())
    EXPECT_EQ(make_eviction_order(name)->name(), name);
  EXPECT_EQ(std::string(kDefaultEvictionOrder), BlockPoolParams{}.eviction);
  EXPECT_EQ(std::string(kDefaultEvictionOrder), ChunkPoolParams{}.eviction);
  EXPECT_EQ(std::string(kDefaultEvictionOrder), PagedParams{}.eviction);
}

TEST(EvictionRegistry, UnknownNameSaysWhatExists) {
  try {
    make_eviction_order("lfu-typo");
    FAIL() << "no error";
  } catch (const std::invalid_argument& e) {
    EXPECT_NE(std::string(e.what()).find("'lfu-typo'"), std::string::npos) << e.what();
    EXPECT_NE(std::string(e.what()).find("known: arc, lfu, lru, s3fifo"), std::string::npos)
        << e.what();
  }
  EXPECT_THROW(BlockPool({4, "nope"}), std::invalid_argument);
  EXPECT_THROW(ChunkPool({4, 4, 4, "nope"}), std::invalid_argument);
  PagedParams p{16, 4, 1, true, 0};
  p.eviction = "nope";
  EXPECT_THROW(PagedPolicy{p}, std::invalid_argument);
  p.eviction = "lru";
  EXPECT_EQ(PagedPolicy{p}.pool().eviction_order().name(), "lru");
  ChunkLruParams c = declared_chunk_lru_params();
  c.main = PagedParams{16, 4, 4, false, 0};
  c.chunk_blocks = 8;
  c.eviction = "nope";  // the chunk pool's order
  EXPECT_THROW(ChunkLruPolicy{c}, std::invalid_argument);
  c.eviction = "lru";
  EXPECT_EQ(ChunkLruPolicy{c}.chunk_pool().eviction_order().name(), "lru");
}

// kv_cache.eviction picks the pools' order by name: the default is lru, an
// unknown name is an error at its line listing what exists, and a policy
// without cached blocks (a Genie mode) does not take the key.
TEST(EvictionYaml, KvCacheEvictionNamesTheOrder) {
  const std::string base = R"(
device: ascend-910b2
model: llama-3.2-1b
workload: {kind: synthetic, requests: 4, arrival: {process: poisson, rate_per_s: 1},
           input_tokens: {dist: constant, value: 64}, output_tokens: {dist: constant, value: 4}}
)";
  EXPECT_EQ(testing::scenario_from_text(base).policy().values().string("eviction"), "lru");
  EXPECT_EQ(testing::scenario_from_text(base + "kv_cache: {policy: paged, eviction: lru}\n")
                .policy()
                .values()
                .string("eviction"),
            "lru");
  try {
    (void)testing::scenario_from_text(base + "kv_cache: {policy: paged, eviction: lfuu}\n");
    FAIL() << "no error";
  } catch (const config::ConfigError& e) {
    const auto& d = e.diagnostics().at(0);
    EXPECT_EQ(d.key_path, "kv_cache.eviction");
    EXPECT_NE(d.allowed.find("lru"), std::string::npos) << d.format();
  }
}

TEST(LruOrder, LeastRecentFirstAndAccessMovesToTheRecentEnd) {
  auto lru = make_eviction_order("lru");
  for (EvictableId id : {5, 1, 7, 3}) lru->on_evictable(id);  // ids need not be dense
  lru->on_access(1);                                          // 5 7 3 1
  lru->on_access(1);                                          // already most recent
  lru->on_pinned(7);                                          // 5 3 1
  lru->on_access(7);                                          // not evictable: no effect
  EXPECT_EQ(lru->victims_in_order(), (std::vector<EvictableId>{5, 3, 1}));
  EXPECT_EQ(lru->pop_victim(), 5);
  lru->on_evictable(7);  // 3 1 7
  EXPECT_EQ(lru->pop_victim(), 3);
  EXPECT_EQ(lru->pop_victim(), 1);
  EXPECT_EQ(lru->pop_victim(), 7);
  EXPECT_THROW(lru->pop_victim(), std::logic_error);
  EXPECT_THROW(lru->on_pinned(7), std::logic_error);
  lru->on_evictable(7);
  EXPECT_THROW(lru->on_evictable(7), std::logic_error);
}

// `lru` against a plain list kept by erase and append, under many random
// calls (enough for its queue to drop its gone entries many times), and its
// batch of victims against the list's front.
TEST(LruOrder, MatchesAListUnderRandomCallsAndBatchesOfVictims) {
  auto lru = make_eviction_order("lru");
  std::vector<EvictableId> list;  // front: next victim
  std::vector<bool> in_list(200, false);
  std::mt19937 rng(3);
  for (int step = 0; step < 50000; ++step) {
    const auto id = static_cast<EvictableId>(rng() % 200);
    const auto at = std::find(list.begin(), list.end(), id);
    switch (rng() % 4) {
      case 0:
        if (in_list[static_cast<size_t>(id)]) break;
        lru->on_evictable(id);
        list.push_back(id);
        in_list[static_cast<size_t>(id)] = true;
        break;
      case 1:
        if (!in_list[static_cast<size_t>(id)]) break;
        lru->on_pinned(id);
        list.erase(at);
        in_list[static_cast<size_t>(id)] = false;
        break;
      case 2:
        lru->on_access(id);
        if (in_list[static_cast<size_t>(id)]) {
          list.erase(at);
          list.push_back(id);
        }
        break;
      default: {
        const auto count = static_cast<int64_t>(rng() % (list.size() / 4 + 1));
        std::vector<EvictableId> victims;
        lru->pop_victims(count, victims);
        ASSERT_EQ(victims, std::vector<EvictableId>(list.begin(), list.begin() + count));
        for (EvictableId v : victims) in_list[static_cast<size_t>(v)] = false;
        list.erase(list.begin(), list.begin() + count);
      }
    }
    ASSERT_EQ(lru->next_victim(), list.empty() ? kNoEvictable : list.front()) << "step " << step;
    // The look-ahead hint names the next victim, and one that is really
    // evictable further on (or none): never an id out of range.
    ASSERT_EQ(lru->victim_ahead(0) == kNoEvictable, list.empty()) << "step " << step;
    const EvictableId ahead = lru->victim_ahead(static_cast<int64_t>(rng() % 8));
    ASSERT_TRUE(ahead == kNoEvictable || (ahead >= 0 && ahead < 200)) << "step " << step;
    if (step % 97 == 0) {
      ASSERT_EQ(lru->victims_in_order(), list) << "step " << step;
    }
  }
}

// With no entry gone (no hit, no pin), the hint is exact: victim_ahead(k)
// is the victim k pops from now, and none past the last.
TEST(LruOrder, VictimAheadNamesTheComingVictimsInOrder) {
  auto lru = make_eviction_order("lru");
  for (EvictableId id : {4, 9, 2, 6, 0}) lru->on_evictable(id);
  const std::vector<EvictableId> order = lru->victims_in_order();
  for (size_t k = 0; k < order.size(); ++k)
    EXPECT_EQ(lru->victim_ahead(static_cast<int64_t>(k)), order[k]);
  EXPECT_EQ(lru->victim_ahead(static_cast<int64_t>(order.size())), kNoEvictable);
  EXPECT_EQ(lru->victim_ahead(-1), kNoEvictable);
  EXPECT_EQ(lru->pop_victim(), 4);
  EXPECT_EQ(lru->victim_ahead(0), 9);
  EXPECT_EQ(lru->victim_ahead(3), 0);
}

// A block table takes one victim at a time: the vector it grows into is
// reallocated a logarithmic number of times, not once per victim; and a
// reserved order hands out the same victims as one grown on demand.
TEST(LruOrder, VictimsOneAtATimeGrowTheirVectorGeometrically) {
  auto reserved = make_eviction_order("lru");
  auto grown = make_eviction_order("lru");
  reserved->reserve(1000);
  for (EvictableId id = 0; id < 1000; ++id) {
    reserved->on_evictable(id);
    grown->on_evictable(id);
  }
  std::vector<EvictableId> table;
  std::vector<EvictableId> other;
  int reallocations = 0;
  for (int i = 0; i < 1000; ++i) {
    const size_t capacity = table.capacity();
    reserved->pop_victims(1, table);
    grown->pop_victims(1, other);
    reallocations += table.capacity() != capacity ? 1 : 0;
  }
  EXPECT_LE(reallocations, 12);
  EXPECT_EQ(table, other);
}

// A range of entries made evictable in one call is the same as the calls
// one by one, into an empty order or behind queued entries.
TEST(LruOrder, EvictableRangeIsTheCallsOneByOne) {
  for (const bool queued_first : {false, true}) {
    auto range = make_eviction_order("lru");
    auto one_by_one = make_eviction_order("lru");
    if (queued_first) {
      range->on_evictable(40);
      one_by_one->on_evictable(40);
    }
    range->on_evictable_range(3, 20);
    for (EvictableId id = 3; id < 23; ++id) one_by_one->on_evictable(id);
    range->on_pinned(7);
    one_by_one->on_pinned(7);
    range->on_evictable(1);
    one_by_one->on_evictable(1);
    EXPECT_EQ(range->victims_in_order(), one_by_one->victims_in_order());
    EXPECT_EQ(range->pop_victim(), one_by_one->pop_victim());
    EXPECT_THROW(range->on_evictable(5), std::logic_error);  // queued by the range
  }
}

TEST(BlockPoolOrder, CallsTheOrderOncePerAllocationFreeAndHit) {
  std::vector<std::string> log;
  BlockPool pool({2}, std::make_unique<RecordingOrder>(&log));
  EXPECT_EQ(log, (std::vector<std::string>{"evictable0", "evictable1"}));
  log.clear();
  const BlockId a = pool.allocate();
  pool.register_hash(a, h(1));
  pool.touch(a);  // a hit on a block in use: access only
  pool.release(a);
  pool.release(a);                // last reference: evictable again
  pool.touch(pool.lookup(h(1)));  // a hit revives it: pinned, then access
  EXPECT_EQ(log,
            (std::vector<std::string>{"victim0", "access0", "evictable0", "pinned0", "access0"}));
  pool.check_invariants();
}

// vLLM's free queue: never-cached and cached free blocks share one queue in
// the order they were freed; a cached block gets no protection.
TEST(BlockPoolOrder, LruReusesFreeBlocksInFreeOrderCachedOrNot) {
  BlockPool pool({3});
  for (BlockId want = 0; want < 3; ++want) EXPECT_EQ(pool.allocate(), want);
  pool.register_hash(0, h(10));
  pool.register_hash(2, h(12));
  pool.release(1);  // never cached
  pool.release(0);
  pool.release(2);
  pool.touch(pool.lookup(h(10)));  // revived ...
  pool.release(0);                 // ... and freed again: now the most recent
  EXPECT_EQ(pool.free_queue(), (std::vector<BlockId>{1, 2, 0}));
  EXPECT_EQ(pool.num_cached_free(), 2);
  EXPECT_EQ(pool.allocate(), 1);
  EXPECT_EQ(pool.evictions(), 0u);
  EXPECT_EQ(pool.allocate(), 2);
  EXPECT_EQ(pool.lookup(h(12)), kNoBlock);
  EXPECT_EQ(pool.lookup(h(10)), 0);
  EXPECT_EQ(pool.allocate(), 0);
  EXPECT_EQ(pool.evictions(), 2u);
  pool.check_invariants();
}

// The same sequence under `lru` and under the test's `mru`: a fresh pool of
// 4, all four allocated and hashed h(0..3) in allocation order, three freed
// (a2, a0, a3), a0 revived by a prefix hit and freed again, then three
// allocations. Free order is a2, a3, a0: lru reuses a2 first, mru a0.
struct BlockRun {
  std::vector<BlockId> allocated;  // a0..a3
  std::vector<BlockId> reused;     // the three allocations at the end
  std::vector<bool> survives;      // lookup(h(i)) still finds a block, for i of a0..a3
};

BlockRun run_blocks(BlockPool pool) {
  BlockRun r;
  for (uint64_t i = 0; i < 4; ++i) {
    r.allocated.push_back(pool.allocate());
    pool.register_hash(r.allocated.back(), h(i));
  }
  pool.release(r.allocated[2]);
  pool.release(r.allocated[0]);
  pool.release(r.allocated[3]);
  pool.touch(pool.lookup(h(0)));
  pool.release(r.allocated[0]);
  r.reused.push_back(pool.allocate());
  for (uint64_t i = 0; i < 4; ++i) r.survives.push_back(pool.lookup(h(i)) != kNoBlock);
  r.reused.push_back(pool.allocate());
  r.reused.push_back(pool.allocate());
  pool.check_invariants();
  return r;
}

TEST(BlockPoolOrder, AnotherOrderChangesWhichFreeBlockIsReused) {
  const BlockRun lru = run_blocks(BlockPool({4}));
  EXPECT_EQ(lru.allocated, (std::vector<BlockId>{0, 1, 2, 3}));  // fresh pool in id order
  EXPECT_EQ(lru.reused, (std::vector<BlockId>{2, 3, 0}));        // a2, a3, a0
  EXPECT_EQ(lru.survives, (std::vector<bool>{true, true, false, true}));

  const BlockRun mru = run_blocks(BlockPool({4}, std::make_unique<MruOrder>()));
  EXPECT_EQ(mru.allocated, (std::vector<BlockId>{3, 2, 1, 0}));  // last freed first
  EXPECT_EQ(mru.reused, (std::vector<BlockId>{3, 0, 1}));        // a0, a3, a2
  EXPECT_EQ(mru.survives, (std::vector<bool>{false, true, true, true}));
}

// Chunks of 4 tokens (one block each) and room for two: the access
// sequence A B A C B A D A, inserting on a miss as the chunk_lru policy does.
std::vector<BlockHash> run_chunks(ChunkPool& pool, const std::vector<BlockHash>& accesses,
                                  int* misses) {
  std::vector<BlockHash> evicted;
  *misses = 0;
  for (const BlockHash& c : accesses) {
    if (pool.touch(c)) continue;
    ++*misses;
    pool.insert(c, 4, &evicted);
  }
  pool.check_invariants();
  return evicted;
}

const BlockHash kA = h(1), kB = h(2), kC = h(3), kD = h(4);
const std::vector<BlockHash> kAccesses = {kA, kB, kA, kC, kB, kA, kD, kA};

TEST(ChunkPoolOrder, LruOnAKnownSequenceByChunkCount) {
  ChunkPool pool({100, 4, 2});
  int misses = 0;
  // [A] [A B] hit:[B A] C:evict B [A C] B:evict A [C B] A:evict C [B A]
  // D:evict B [A D] hit:[D A]
  EXPECT_EQ(run_chunks(pool, kAccesses, &misses), (std::vector<BlockHash>{kB, kA, kC, kB}));
  EXPECT_EQ(misses, 6);
  EXPECT_EQ(pool.victim_order(), (std::vector<BlockHash>{kD, kA}));
}

TEST(ChunkPoolOrder, LruOnAKnownSequenceByBlocks) {
  // Same sequence, bounded by blocks instead: two blocks, unbounded count.
  ChunkPool pool({2, 4, 1 << 20});
  int misses = 0;
  EXPECT_EQ(run_chunks(pool, kAccesses, &misses), (std::vector<BlockHash>{kB, kA, kC, kB}));
  EXPECT_EQ(misses, 6);
  EXPECT_EQ(pool.free_blocks(), 0);
}

TEST(ChunkPoolOrder, AnotherOrderChangesTheVictims) {
  ChunkPool pool({100, 4, 2}, std::make_unique<MruOrder>());
  EXPECT_EQ(pool.eviction_order().name(), "mru");
  int misses = 0;
  // [A] [A B] hit:[B A] C:evict A [B C] hit:[C B] A:evict B [C A]
  // D:evict A [C D] A:evict D [C A]
  EXPECT_EQ(run_chunks(pool, kAccesses, &misses), (std::vector<BlockHash>{kA, kB, kA, kD}));
  EXPECT_EQ(misses, 6);
  EXPECT_EQ(pool.victim_order(), (std::vector<BlockHash>{kA, kC}));
  EXPECT_EQ(pool.evictions(), 4u);
  pool.clear();
  EXPECT_EQ(pool.num_chunks(), 0);
  EXPECT_TRUE(pool.eviction_order().victims_in_order().empty());
  pool.check_invariants();
}

}  // namespace
}  // namespace kvsim::KVSIM_TEST_FILE_SCOPE
