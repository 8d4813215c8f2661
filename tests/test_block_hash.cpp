// Block hashes (sim/cache/block_hash.hpp): a block's hash from its ids is
// XXH3-128 over its parent's two words and then the ids, whichever way it is
// computed (one call on a buffer for a short block, the streaming state for
// a long one), so hashes agree with every hash computed before.
#include <gtest/gtest.h>

#include <cstdint>
#include <random>
#include <vector>

#include "sim/cache/block_hash.hpp"

#define XXH_INLINE_ALL
#include <xxhash.h>

namespace kvsim::KVSIM_TEST_FILE_SCOPE {
namespace {

// The hash as first defined: the streaming state fed the parent's words,
// then the ids.
BlockHash streamed_block_hash(const BlockHash& parent, const int32_t* tokens, size_t count) {
  XXH3_state_t state;
  XXH3_128bits_reset(&state);
  const uint64_t parent_words[2] = {parent.low, parent.high};
  XXH3_128bits_update(&state, parent_words, sizeof(parent_words));
  XXH3_128bits_update(&state, tokens, count * sizeof(int32_t));
  const XXH128_hash_t h = XXH3_128bits_digest(&state);
  return {h.low64, h.high64};
}

TEST(ChainedBlockHash, IsTheStreamedHashOfParentAndIdsAtEveryLength) {
  // Lengths on both sides of XXH3's input classes (16, 128, 240 bytes with
  // the parent's 16) and of the one-call buffer, many random contents each.
  std::mt19937_64 rng(5);
  for (size_t count = 0; count <= 300; ++count) {
    for (int t = 0; t < 40; ++t) {
      std::vector<int32_t> ids(count);
      for (int32_t& id : ids) id = static_cast<int32_t>(rng() % 152000);
      const BlockHash parent = t == 0 ? BlockHash{} : BlockHash{rng(), rng()};
      ASSERT_EQ(chained_block_hash(parent, ids.data(), count),
                streamed_block_hash(parent, ids.data(), count))
          << count << " ids, trial " << t;
    }
  }
}

TEST(ChainedBlockHash, ChainsOnTheParent) {
  const std::vector<int32_t> ids(16, 7);
  const BlockHash a = chained_block_hash({}, ids.data(), ids.size());
  const BlockHash b = chained_block_hash(a, ids.data(), ids.size());
  EXPECT_NE(a, b);
  EXPECT_EQ(b, chained_block_hash(a, ids.data(), ids.size()));
}

}  // namespace
}  // namespace kvsim::KVSIM_TEST_FILE_SCOPE
