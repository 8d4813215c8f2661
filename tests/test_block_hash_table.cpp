// BlockHashTable against std::unordered_map: random inserts, finds and
// erases (including erases of a hash stored with another value) over 3,000
// keys, enough for the table to grow several times and for probe runs to form.
#include "sim/cache/block_hash_table.hpp"

#include <gtest/gtest.h>

#include <random>
#include <unordered_map>
#include <vector>

namespace kvsim {
namespace {

TEST(BlockHashTable, InsertFindEraseBasics) {
  BlockHashTable table;
  EXPECT_EQ(table.find({1, 2}), BlockHashTable::kAbsent);
  EXPECT_TRUE(table.insert({1, 2}, 7));
  EXPECT_FALSE(table.insert({1, 2}, 8));  // the first copy stays canonical
  EXPECT_EQ(table.find({1, 2}), 7);
  EXPECT_FALSE(table.erase({1, 2}, 8));  // not the canonical block
  EXPECT_EQ(table.find({1, 2}), 7);
  EXPECT_TRUE(table.erase({1, 2}, 7));
  EXPECT_EQ(table.find({1, 2}), BlockHashTable::kAbsent);
  EXPECT_EQ(table.size(), 0u);
}

TEST(BlockHashTable, MatchesUnorderedMapUnderCollidingRandomOperations) {
  std::mt19937_64 rng(7);
  std::vector<BlockHash> universe;
  for (uint64_t i = 0; i < 3000; ++i) universe.push_back({(rng() % 40) << 3, i});
  BlockHashTable table;
  std::unordered_map<BlockHash, int32_t, BlockHashHasher> reference;
  for (int step = 0; step < 200000; ++step) {
    const BlockHash& h = universe[rng() % universe.size()];
    const int32_t value = static_cast<int32_t>(rng() % 5);
    switch (rng() % 3) {
      case 0: {
        const bool inserted = reference.try_emplace(h, value).second;
        ASSERT_EQ(table.insert(h, value), inserted) << "step " << step;
        break;
      }
      case 1: {
        auto it = reference.find(h);
        const bool erased = it != reference.end() && it->second == value;
        if (erased) reference.erase(it);
        ASSERT_EQ(table.erase(h, value), erased) << "step " << step;
        break;
      }
      default: {
        auto it = reference.find(h);
        ASSERT_EQ(table.find(h), it == reference.end() ? BlockHashTable::kAbsent : it->second)
            << "step " << step;
      }
    }
    ASSERT_EQ(table.size(), reference.size());
  }
  for (const BlockHash& h : universe) {
    auto it = reference.find(h);
    ASSERT_EQ(table.find(h), it == reference.end() ? BlockHashTable::kAbsent : it->second);
  }
}

}  // namespace
}  // namespace kvsim
