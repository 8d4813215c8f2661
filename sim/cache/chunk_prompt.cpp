#include "sim/cache/chunk_prompt.hpp"

#include <xxhash.h>

namespace kvsim {

BlockHash chunk_content_hash(const int32_t* tokens, int64_t length) {
  const XXH128_hash_t h = XXH3_128bits(tokens, static_cast<size_t>(length) * sizeof(int32_t));
  return {h.low64, h.high64};
}

std::vector<BlockHash> chunk_segment_keys(const int32_t* prompt,
                                          const std::vector<PromptSegment>& segments,
                                          ChunkAttention attention) {
  std::vector<BlockHash> keys;
  if (segments.size() < 2) return keys;
  keys.reserve(segments.size() - 1);
  for (size_t i = 0; i + 1 < segments.size(); ++i) {
    const int32_t* tokens = prompt + segments[i].begin;
    const int64_t n = segments[i].length;
    keys.push_back(i > 0 && attention == ChunkAttention::system_prompt
                       ? chained_block_hash(keys.front(), tokens, static_cast<size_t>(n))
                       : chunk_content_hash(tokens, n));
  }
  return keys;
}

}  // namespace kvsim
