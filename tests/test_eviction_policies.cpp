// lfu, s3fifo and arc on known access sequences: a textbook reference string
// checked against Belady's optimum, each policy's defining behaviour traced
// by hand (LFU's count order, S3-FIFO's small/main/ghost queues, ARC's
// T1/T2/B1/B2 and its target p), and every order under a block pool and a
// chunk pool keeping their invariants through random use.
#include <gtest/gtest.h>

#include <algorithm>
#include <map>
#include <memory>
#include <random>
#include <string>
#include <unordered_map>
#include <vector>

#include "sim/cache/block_pool.hpp"
#include "sim/cache/chunk_pool.hpp"
#include "sim/cache/eviction/arc_order.hpp"
#include "sim/cache/eviction/eviction_registry.hpp"
#include "sim/cache/eviction/lfu_order.hpp"
#include "sim/cache/eviction/s3fifo_order.hpp"

namespace kvsim::KVSIM_TEST_FILE_SCOPE {
namespace {

// A cache of `capacity` keys driven through an order the way the chunk pool
// drives it: every held key is evictable, a hit is on_access, a miss takes
// a free slot or the order's victim, then on_content + on_evictable.
class KeyCache {
 public:
  KeyCache(std::unique_ptr<EvictionOrder> order, int capacity)
      : order_(std::move(order)), capacity_(capacity) {}

  bool access(uint64_t key) {
    auto it = where_.find(key);
    if (it != where_.end()) {
      order_->on_access(it->second);
      return true;
    }
    EvictableId id;
    if (static_cast<int>(where_.size()) < capacity_) {
      id = static_cast<EvictableId>(where_.size());
    } else {
      id = order_->pop_victim();
      where_.erase(key_of_[id]);
    }
    key_of_[id] = key;
    where_[key] = id;
    order_->on_content(id, key);
    order_->on_evictable(id);
    return false;
  }
  int hits(const std::vector<uint64_t>& keys) {
    int n = 0;
    for (uint64_t k : keys) n += access(k) ? 1 : 0;
    return n;
  }
  bool holds(uint64_t key) const { return where_.count(key) > 0; }
  EvictableId id_of(uint64_t key) const { return where_.at(key); }
  EvictionOrder& order() { return *order_; }

 private:
  std::unique_ptr<EvictionOrder> order_;
  int capacity_;
  std::unordered_map<uint64_t, EvictableId> where_;
  std::map<EvictableId, uint64_t> key_of_;
};

// Belady's MIN: on a miss with the cache full, evict the key used farthest
// in the future (or never). The most hits any order can get.
int belady_hits(const std::vector<uint64_t>& keys, int capacity) {
  std::vector<uint64_t> held;
  int hits = 0;
  for (size_t i = 0; i < keys.size(); ++i) {
    if (std::find(held.begin(), held.end(), keys[i]) != held.end()) {
      ++hits;
      continue;
    }
    if (static_cast<int>(held.size()) == capacity) {
      size_t victim = 0, farthest = 0;
      for (size_t h = 0; h < held.size(); ++h) {
        size_t next = i + 1;
        while (next < keys.size() && keys[next] != held[h]) ++next;
        if (next >= farthest) {
          farthest = next;
          victim = h;
        }
      }
      held.erase(held.begin() + static_cast<std::ptrdiff_t>(victim));
    }
    held.push_back(keys[i]);
  }
  return hits;
}

// Silberschatz, Galvin and Gagne's reference string with 3 frames: the
// optimal replacement has 9 faults (11 hits), LRU 12 faults (8 hits).
const std::vector<uint64_t> kReference = {7, 0, 1, 2, 0, 3, 0, 4, 2, 3,
                                          0, 3, 2, 1, 2, 0, 1, 7, 0, 1};

TEST(EvictionOrdersBelady, TextbookStringAgainstTheOptimum) {
  EXPECT_EQ(belady_hits(kReference, 3), 11);
  EXPECT_EQ(KeyCache(make_eviction_order("lru"), 3).hits(kReference), 8);
  for (const std::string& name : eviction_order_names())
    EXPECT_LE(KeyCache(make_eviction_order(name), 3).hits(kReference), 11) << name;
}

TEST(EvictionOrdersBelady, NoOrderBeatsTheOptimumOnRandomStrings) {
  std::mt19937_64 rng(7);
  for (int trial = 0; trial < 20; ++trial) {
    std::vector<uint64_t> keys(300);
    // Skewed: low keys are hot, as shared prefixes are.
    std::geometric_distribution<int> pick(0.15);
    for (auto& k : keys) k = static_cast<uint64_t>(pick(rng));
    const int capacity = 2 + trial % 6;
    const int best = belady_hits(keys, capacity);
    for (const std::string& name : eviction_order_names()) {
      const int got = KeyCache(make_eviction_order(name), capacity).hits(keys);
      EXPECT_LE(got, best) << name << " capacity " << capacity;
      EXPECT_GT(got, 0) << name;
    }
  }
}

TEST(LfuOrder, LeastHitGoesFirstAndTiesGoLeastRecent) {
  KeyCache c(make_eviction_order("lfu"), 2);
  EXPECT_EQ(c.hits({'A', 'A', 'B', 'C'}), 1);  // C evicts B (0 hits), not A (1)
  EXPECT_TRUE(c.holds('A'));
  EXPECT_FALSE(c.holds('B'));
  KeyCache tie(make_eviction_order("lfu"), 2);
  tie.hits({'A', 'B', 'C'});  // A and B both at 0 hits: the older, A, goes
  EXPECT_FALSE(tie.holds('A'));
  EXPECT_TRUE(tie.holds('B'));
  // A frequently used key survives a scan that flushes LRU.
  const std::vector<uint64_t> scan = {'H', 'H', 'H', 1, 2, 3, 4, 5, 6, 'H'};
  EXPECT_EQ(KeyCache(make_eviction_order("lfu"), 3).hits(scan), 3);
  EXPECT_EQ(KeyCache(make_eviction_order("lru"), 3).hits(scan), 2);
}

TEST(LfuOrder, CountsSaturateAndResetWithNewContent) {
  LfuOrder lfu;
  lfu.on_evictable(0);
  for (int i = 0; i < 100; ++i) lfu.on_access(0);
  EXPECT_EQ(lfu.count(0), LfuOrder::kMaxCount);
  lfu.on_evictable(1);
  EXPECT_EQ(lfu.victims_in_order(), (std::vector<EvictableId>{1, 0}));
  EXPECT_EQ(lfu.pop_victim(), 1);
  EXPECT_EQ(lfu.pop_victim(), 0);
  EXPECT_EQ(lfu.count(0), 0);  // reused: its next content counts from 0
  EXPECT_THROW(lfu.pop_victim(), std::logic_error);
}

// S3-FIFO with 10 entries: S is "full" at 1 entry (10%), G holds 9 keys.
TEST(S3FifoOrder, OneHitWondersChurnTheSmallQueueWhileAHitKeyMovesToMain) {
  auto owned = std::make_unique<S3FifoOrder>();
  S3FifoOrder& s3 = *owned;
  KeyCache c(std::move(owned), 10);
  EXPECT_FALSE(c.access(1000));
  EXPECT_TRUE(c.access(1000));  // count 1: it will move to M instead of leaving
  for (uint64_t k = 1; k <= 9; ++k) c.access(k);
  EXPECT_EQ(s3.small_size(), 10);
  c.access(10);  // S's oldest (1000) was hit: moves to M; then key 1 is evicted into G
  EXPECT_EQ(s3.queue_of(c.id_of(1000)), S3FifoOrder::kMain);
  EXPECT_EQ(s3.count(c.id_of(1000)), 0);
  EXPECT_FALSE(c.holds(1));
  EXPECT_TRUE(s3.in_ghost(1));
  for (uint64_t k = 11; k <= 40; ++k) c.access(k);  // a scan of one-hit keys
  EXPECT_TRUE(c.holds(1000));                       // LRU would have lost it long ago
  EXPECT_EQ(s3.main_size(), 1);
  // S now holds 32..40; G the last 9 keys evicted from S, 23..31. A key
  // evicted lately comes back straight into M.
  EXPECT_FALSE(c.holds(28));
  EXPECT_TRUE(s3.in_ghost(28));
  c.access(28);
  EXPECT_EQ(s3.queue_of(c.id_of(28)), S3FifoOrder::kMain);
  EXPECT_FALSE(s3.in_ghost(28));
  // Keys evicted long ago have left G (it keeps 9).
  EXPECT_FALSE(s3.in_ghost(1));
}

TEST(S3FifoOrder, MainQueueIsATwoBitClock) {
  S3FifoParams p;
  p.small_ratio = 0.5;
  S3FifoOrder s3(p);
  // Four entries, all moved to M by a hit in S.
  for (EvictableId id = 0; id < 4; ++id) {
    s3.on_content(id, 100 + static_cast<uint64_t>(id));
    s3.on_evictable(id);
    s3.on_access(id);
  }
  // S holds 4 >= 2: 0, 1 and 2 move to M (count reset to 0) until S holds
  // 1 < 2; then M's oldest, 0 at count 0, goes.
  EXPECT_EQ(s3.pop_victim(), 0);
  EXPECT_EQ(s3.main_size(), 2);
  EXPECT_EQ(s3.small_size(), 1);
  for (int i = 0; i < 5; ++i) s3.on_access(1);  // saturates at 3
  EXPECT_EQ(s3.count(1), 3);
  EXPECT_EQ(s3.pop_victim(), 2);  // 1 passes the hand with count 3 -> 2
  EXPECT_EQ(s3.count(1), 2);
  EXPECT_EQ(s3.pop_victim(), 1);   // 2 -> 1 -> 0, then out
  EXPECT_EQ(s3.pop_victim(), 3);   // S: 3 was hit, moves to M, then is M's only entry at 0
  EXPECT_FALSE(s3.in_ghost(100));  // evicted from M: no ghost
}

// ARC with c = 4, traced by hand.
TEST(ArcOrder, FrequentKeysSurviveAScanAndGhostHitsMoveTheTarget) {
  auto owned = std::make_unique<ArcOrder>();
  ArcOrder& arc = *owned;
  KeyCache c(std::move(owned), 4);
  c.hits({'A', 'A', 'B', 'B'});  // both hit once: T2
  EXPECT_EQ(arc.t2_size(), 2);
  c.hits({'C', 'D', 'E'});  // E evicts C, T1's least recent (|T1| = 2 > p = 0)
  EXPECT_TRUE(arc.in_b1('C'));
  EXPECT_EQ(arc.target_t1(), 0.0);
  // C again: D leaves T1 for B1, then C's ghost hit raises p by
  // max(|B2|/|B1|, 1) = 1 and C enters T2.
  EXPECT_FALSE(c.access('C'));
  EXPECT_EQ(arc.target_t1(), 1.0);
  EXPECT_EQ(arc.list_of(c.id_of('C')), ArcOrder::kT2);
  EXPECT_TRUE(arc.in_b1('D'));
  // F: |T1| = 1 is not above p = 1, so T2's least recent (A) goes to B2.
  EXPECT_FALSE(c.access('F'));
  EXPECT_FALSE(c.holds('A'));
  EXPECT_TRUE(arc.in_b2('A'));
  // A again: E (T1, |T1| = 2 > 1) goes to B1, then A's ghost hit in B2
  // lowers p by max(|B1|/|B2|, 1) = 2, to 0.
  EXPECT_FALSE(c.access('A'));
  EXPECT_EQ(arc.target_t1(), 0.0);
  EXPECT_TRUE(arc.in_b1('E'));
  EXPECT_EQ(arc.list_of(c.id_of('A')), ArcOrder::kT2);
  // A scan of new keys only cycles T1: B, C and A stay.
  for (uint64_t k = 1; k <= 10; ++k) c.access(k);
  EXPECT_TRUE(c.holds('A'));
  EXPECT_TRUE(c.holds('B'));
  EXPECT_TRUE(c.holds('C'));
  EXPECT_LE(arc.b1_size() + arc.t1_size(), 4);
}

// Every order under a block pool: random allocations, hits and frees keep
// the pool's invariants (the order's evictable set is the pool's free set).
TEST(EvictionOrdersInPools, BlockPoolInvariantsUnderRandomUse) {
  for (const std::string& name : eviction_order_names()) {
    BlockPool pool({16, name});
    std::mt19937 rng(3);
    std::vector<BlockId> held;
    uint64_t next_hash = 1;
    for (int step = 0; step < 2000; ++step) {
      const int op = static_cast<int>(rng() % 3);
      if (op == 0 && pool.num_free() > 0) {
        const BlockId b = pool.allocate();
        if (rng() % 2) pool.register_hash(b, {next_hash++, 0});
        held.push_back(b);
      } else if (op == 1 && !held.empty()) {
        const size_t i = rng() % held.size();
        pool.release(held[i]);
        held.erase(held.begin() + static_cast<std::ptrdiff_t>(i));
      } else if (next_hash > 1) {
        const BlockId b = pool.lookup({1 + rng() % (next_hash - 1), 0});
        if (b != kNoBlock) {
          pool.touch(b);
          held.push_back(b);
        }
      }
      ASSERT_NO_THROW(pool.check_invariants()) << name << " step " << step;
    }
    EXPECT_GT(pool.evictions(), 0u) << name;
  }
}

TEST(EvictionOrdersInPools, ChunkPoolInvariantsUnderRandomUse) {
  for (const std::string& name : eviction_order_names()) {
    ChunkPool pool({32, 16, 6, name});
    std::mt19937 rng(5);
    for (int step = 0; step < 1000; ++step) {
      const BlockHash h{1 + rng() % 20, 0};
      if (!pool.touch(h)) pool.insert(h, 16 * (1 + static_cast<int64_t>(rng() % 4)));
      ASSERT_NO_THROW(pool.check_invariants()) << name << " step " << step;
      if (step == 500) pool.clear();
    }
    EXPECT_GT(pool.evictions(), 0u) << name;
  }
}

}  // namespace
}  // namespace kvsim::KVSIM_TEST_FILE_SCOPE
