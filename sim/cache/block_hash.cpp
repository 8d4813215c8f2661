#include "sim/cache/block_hash.hpp"

// The streaming state lives on the stack: needs the static-linking API.
#define XXH_STATIC_LINKING_ONLY
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

}  // namespace kvsim
