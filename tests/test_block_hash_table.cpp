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

namespace kvsim {
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

}  // namespace
}  // namespace kvsim
