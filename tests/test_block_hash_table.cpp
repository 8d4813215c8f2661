// BlockHashTable against std::unordered_map, used as a block pool uses it
// (each value, a block, holds one hash and is stored under it at most
// once): random inserts, finds and erases (including erases of a value that
// is not the one stored) over 3,000 keys, enough for the table to grow
// several times and for probe runs to form; and hashes that agree on every
// bit the table keeps in its entries, which only the whole hash tells apart.
#include "sim/cache/block_hash_table.hpp"

#include <gtest/gtest.h>

#include <random>
#include <unordered_map>
#include <vector>

namespace kvsim::KVSIM_TEST_FILE_SCOPE {
namespace {

// What a pool keeps: the hash each block holds.
struct Blocks {
  std::vector<BlockHash> hash;
  const BlockHash& operator()(int32_t b) const { return hash[static_cast<size_t>(b)]; }
};

TEST(BlockHashTable, InsertFindEraseBasics) {
  Blocks blocks{std::vector<BlockHash>(10)};
  BlockHashTable table;
  EXPECT_EQ(table.find({1, 2}, blocks), BlockHashTable::kAbsent);
  blocks.hash[7] = {1, 2};
  EXPECT_TRUE(table.insert({1, 2}, 7, blocks));
  blocks.hash[8] = {1, 2};
  EXPECT_FALSE(table.insert({1, 2}, 8, blocks));  // the first copy stays canonical
  EXPECT_EQ(table.find({1, 2}, blocks), 7);
  EXPECT_FALSE(table.erase({1, 2}, 8, blocks));  // not the canonical block
  EXPECT_EQ(table.find({1, 2}, blocks), 7);
  EXPECT_TRUE(table.erase({1, 2}, 7, blocks));
  EXPECT_EQ(table.find({1, 2}, blocks), BlockHashTable::kAbsent);
  EXPECT_EQ(table.size(), 0u);
}

// Hashes with one home bucket (tags alike in their top bits): the ninth
// goes past the full home bucket, where an insert of the same hash must
// still find it; a slot freed at home is taken again first.
TEST(BlockHashTable, InsertLooksPastAFullHomeBucketOnlyWhenEntriesLiveThere) {
  std::vector<BlockHash> hashes;
  for (uint64_t i = 0; i < 10; ++i) {
    const uint64_t high = i + 1;
    hashes.push_back({(uint64_t{0x5A5A} << 16 | i) ^ (high * 0x9E3779B97F4A7C15ull), high});
  }
  Blocks blocks{hashes};
  blocks.hash.resize(20);
  BlockHashTable table;
  table.reserve(8);  // 8 buckets: one home for all ten
  const size_t buckets = table.bucket_count();
  for (int32_t i = 0; i < 9; ++i)
    ASSERT_TRUE(table.insert(hashes[static_cast<size_t>(i)], i, blocks));
  EXPECT_EQ(table.bucket_count(), buckets);
  EXPECT_EQ(table.overflowing_buckets(), 1u);
  blocks.hash[18] = hashes[8];
  EXPECT_FALSE(table.insert(hashes[8], 18, blocks));  // stored past home
  blocks.hash[13] = hashes[3];
  EXPECT_FALSE(table.insert(hashes[3], 13, blocks));  // stored at home
  ASSERT_TRUE(table.erase(hashes[2], 2, blocks));
  ASSERT_TRUE(table.insert(hashes[9], 9, blocks));
  EXPECT_EQ(table.overflowing_buckets(), 1u);  // into the freed home slot
  for (int32_t i = 0; i < 10; ++i)
    EXPECT_EQ(table.find(hashes[static_cast<size_t>(i)], blocks),
              i == 2 ? BlockHashTable::kAbsent : i);
}

// Random operations over `universe`, checked step by step against a map.
void check_against_map(const std::vector<BlockHash>& universe, uint64_t seed) {
  std::mt19937_64 rng(seed);
  constexpr int32_t kBlocks = 4000;
  Blocks blocks{std::vector<BlockHash>(kBlocks)};
  std::vector<bool> stored(kBlocks, false);
  BlockHashTable table;
  std::unordered_map<BlockHash, int32_t, BlockHashHasher> reference;
  for (int step = 0; step < 200000; ++step) {
    const auto b = static_cast<int32_t>(rng() % kBlocks);
    switch (rng() % 3) {
      case 0: {
        if (stored[static_cast<size_t>(b)]) break;  // a block holds one content
        const BlockHash& h = universe[rng() % universe.size()];
        const bool inserted = reference.try_emplace(h, b).second;
        ASSERT_EQ(table.insert(h, b, blocks), inserted) << "step " << step;
        if (inserted) {
          blocks.hash[static_cast<size_t>(b)] = h;
          stored[static_cast<size_t>(b)] = true;
        }
        break;
      }
      case 1: {
        // The block's own hash, or another one (then never erased).
        const BlockHash h = rng() % 4 == 0 ? universe[rng() % universe.size()]
                                           : blocks.hash[static_cast<size_t>(b)];
        auto it = reference.find(h);
        const bool erased = it != reference.end() && it->second == b;
        if (erased) {
          reference.erase(it);
          stored[static_cast<size_t>(b)] = false;
        }
        ASSERT_EQ(table.erase(h, b, blocks), erased) << "step " << step;
        break;
      }
      default: {
        const BlockHash& h = universe[rng() % universe.size()];
        auto it = reference.find(h);
        ASSERT_EQ(table.find(h, blocks),
                  it == reference.end() ? BlockHashTable::kAbsent : it->second)
            << "step " << step;
      }
    }
    ASSERT_EQ(table.size(), reference.size());
  }
  for (const BlockHash& h : universe) {
    auto it = reference.find(h);
    ASSERT_EQ(table.find(h, blocks), it == reference.end() ? BlockHashTable::kAbsent : it->second);
  }
}

TEST(BlockHashTable, MatchesUnorderedMapUnderCollidingRandomOperations) {
  std::mt19937_64 rng(7);
  std::vector<BlockHash> universe;
  for (uint64_t i = 0; i < 3000; ++i) universe.push_back({(rng() % 40) << 3, i});
  check_against_map(universe, 7);
}

TEST(BlockHashTable, HashesAlikeInEveryKeptBitAreToldApartByTheWholeHash) {
  // Groups of 8 hashes whose BlockHashHasher values are equal: same place,
  // same tag, different content.
  std::mt19937_64 rng(11);
  std::vector<BlockHash> universe;
  for (int group = 0; group < 375; ++group) {
    const uint64_t hashed = rng();
    for (int k = 0; k < 8; ++k) {
      const uint64_t high = rng();
      universe.push_back({hashed ^ (high * 0x9E3779B97F4A7C15ull), high});
      ASSERT_EQ(BlockHashHasher{}(universe.back()), static_cast<size_t>(hashed));
    }
  }
  check_against_map(universe, 11);
}

// Hashes in groups of 100 whose tags share their top 16 bits: at every
// size up to 2^16 buckets a group has one home bucket, so each group runs
// over a dozen buckets and erases keep reaching entries stored past buckets
// that have room again (the overflow counts must follow exactly).
TEST(BlockHashTable, MatchesUnorderedMapWithLongOverflowRuns) {
  std::vector<BlockHash> universe;
  for (uint64_t group = 0; group < 30; ++group) {
    for (uint64_t i = 0; i < 100; ++i) {
      const uint64_t high = group * 1000 + i + 1;
      const uint64_t hashed = (group * 0x9E37u << 16) % (1u << 31) | i;  // tag: group bits, then i
      universe.push_back({hashed ^ (high * 0x9E3779B97F4A7C15ull), high});
    }
  }
  check_against_map(universe, 13);
  // The same runs, then every entry erased: no count is left behind.
  Blocks blocks{universe};
  BlockHashTable table;
  for (size_t i = 0; i < universe.size(); ++i)
    ASSERT_TRUE(table.insert(universe[i], static_cast<int32_t>(i), blocks));
  EXPECT_GT(table.overflowing_buckets(), 0u);
  for (size_t i = universe.size(); i-- > 0;)
    ASSERT_TRUE(table.erase(universe[i], static_cast<int32_t>(i), blocks));
  EXPECT_EQ(table.overflowing_buckets(), 0u);
}

// A table that keeps churning at one size (every insert followed by an
// erase, as a full pool evicts one block per block it fills) neither grows
// nor loses an entry.
TEST(BlockHashTable, ChurnAtOneSizeKeepsEveryEntryFindable) {
  constexpr int32_t kLive = 500;
  std::mt19937_64 rng(5);
  Blocks blocks{std::vector<BlockHash>(2 * kLive)};
  BlockHashTable table;
  std::vector<int32_t> live;
  std::vector<int32_t> spare;
  for (int32_t b = 0; b < 2 * kLive; ++b) (b < kLive ? live : spare).push_back(b);
  for (int32_t b : live) {
    blocks.hash[static_cast<size_t>(b)] = {rng(), rng()};
    ASSERT_TRUE(table.insert(blocks.hash[static_cast<size_t>(b)], b, blocks));
  }
  for (int step = 0; step < 50000; ++step) {
    const size_t i = rng() % live.size();
    const int32_t gone = live[i];
    ASSERT_TRUE(table.erase(blocks.hash[static_cast<size_t>(gone)], gone, blocks));
    const int32_t b = spare.back();
    spare.pop_back();
    blocks.hash[static_cast<size_t>(b)] = {rng(), rng()};
    ASSERT_TRUE(table.insert(blocks.hash[static_cast<size_t>(b)], b, blocks));
    live[i] = b;
    spare.push_back(gone);
  }
  ASSERT_EQ(table.size(), static_cast<size_t>(kLive));
  for (int32_t b : live) ASSERT_EQ(table.find(blocks.hash[static_cast<size_t>(b)], blocks), b);
  for (int32_t b : spare) {
    ASSERT_EQ(table.find(blocks.hash[static_cast<size_t>(b)], blocks), BlockHashTable::kAbsent);
  }
  // Emptied, the table keeps no trace of the runs it had.
  for (int32_t b : live) ASSERT_TRUE(table.erase(blocks.hash[static_cast<size_t>(b)], b, blocks));
  EXPECT_EQ(table.size(), 0u);
  EXPECT_EQ(table.overflowing_buckets(), 0u);
}

// Reserved for as many entries as a pool has blocks, a table holds them all
// without growing, keeps what it held when reserved for more, and never
// shrinks on a smaller reserve.
TEST(BlockHashTable, ReservedForEveryBlockNeverGrows) {
  constexpr int32_t kBlocks = 5000;
  std::mt19937_64 rng(9);
  Blocks blocks{std::vector<BlockHash>(kBlocks)};
  BlockHashTable table;
  blocks.hash[0] = {rng(), rng()};
  ASSERT_TRUE(table.insert(blocks.hash[0], 0, blocks));
  table.reserve(kBlocks);
  const size_t buckets = table.bucket_count();
  EXPECT_GE(8 * buckets, 2u * kBlocks);  // at most half full
  EXPECT_EQ(table.find(blocks.hash[0], blocks), 0);
  for (int32_t b = 1; b < kBlocks; ++b) {
    blocks.hash[static_cast<size_t>(b)] = {rng(), rng()};
    ASSERT_TRUE(table.insert(blocks.hash[static_cast<size_t>(b)], b, blocks));
  }
  EXPECT_EQ(table.bucket_count(), buckets);
  table.reserve(10);
  EXPECT_EQ(table.bucket_count(), buckets);
  for (int32_t b = 0; b < kBlocks; ++b)
    ASSERT_EQ(table.find(blocks.hash[static_cast<size_t>(b)], blocks), b);
}

}  // namespace
}  // namespace kvsim::KVSIM_TEST_FILE_SCOPE
