#include "sim/cache/block_hash.hpp"

#include <cstring>

// Compiled here rather than called in the shared library: a prompt's block
// hashes form a chain (each is its parent's input), so each call's latency
// adds up, and inlined the fixed 56-byte input of a described block takes a
// short straight path. Same algorithm, same digests. The streaming state
// lives on the stack, as the static-linking API allows.
#define XXH_INLINE_ALL
#include <xxhash.h>

namespace kvsim {

BlockHash chained_block_hash(const BlockHash& parent, const int32_t* tokens, size_t count) {
  // A block of up to kOneShotIds ids is laid out with its parent's words in
  // one buffer and hashed in one call: XXH3's streaming digest of at most
  // 240 bytes hashes its buffered copy of the same bytes the same way, so
  // the digests are the same (tests/test_block_hash.cpp), without the
  // state's reset and two buffered updates (a block of 16 ids: 80 bytes).
  constexpr size_t kOneShotIds = (240 - 16) / sizeof(int32_t);
  if (count <= kOneShotIds) {
    alignas(16) unsigned char input[16 + kOneShotIds * sizeof(int32_t)];
    std::memcpy(input, &parent.low, sizeof(parent.low));
    std::memcpy(input + 8, &parent.high, sizeof(parent.high));
    // An empty block may come with no ids at all (nullptr), which memcpy
    // must not be given even for zero bytes.
    if (count > 0) std::memcpy(input + 16, tokens, count * sizeof(int32_t));
    const XXH128_hash_t h = XXH3_128bits(input, 16 + count * sizeof(int32_t));
    return {h.low64, h.high64};
  }
  XXH3_state_t state;
  XXH3_128bits_reset(&state);
  const uint64_t parent_words[2] = {parent.low, parent.high};
  XXH3_128bits_update(&state, parent_words, sizeof(parent_words));
  XXH3_128bits_update(&state, tokens, count * sizeof(int32_t));
  const XXH128_hash_t h = XXH3_128bits_digest(&state);
  return {h.low64, h.high64};
}

BlockHash chained_stream_block_hash(const BlockHash& parent, uint64_t key, int64_t vocab_size,
                                    int64_t offset, int64_t count) {
  constexpr uint64_t kStreamTag = 0x73747265616d6b76ull;  // "streamkv"
  const uint64_t words[7] = {parent.low,
                             parent.high,
                             kStreamTag,
                             key,
                             static_cast<uint64_t>(vocab_size),
                             static_cast<uint64_t>(offset),
                             static_cast<uint64_t>(count)};
  const XXH128_hash_t h = XXH3_128bits(words, sizeof(words));
  return {h.low64, h.high64};
}

}  // namespace kvsim
