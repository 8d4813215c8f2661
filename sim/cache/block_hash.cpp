#include "sim/cache/block_hash.hpp"

// Compiled here rather than called in the shared library: a prompt's block
// hashes form a chain (each is its parent's input), so each call's latency
// adds up, and inlined the fixed 56-byte input of a described block takes a
// short straight path. Same algorithm, same digests. The streaming state
// lives on the stack, as the static-linking API allows.
#define XXH_INLINE_ALL
#include <xxhash.h>

namespace kvsim {

BlockHash chained_block_hash(const BlockHash& parent, const int32_t* tokens, size_t count) {
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
