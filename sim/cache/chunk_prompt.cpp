#include "sim/cache/chunk_prompt.hpp"

#include <xxhash.h>

namespace kvsim {

std::vector<PromptSegment> split_chunked_prompt(const int32_t* prompt, int64_t length) {
  std::vector<PromptSegment> segments;
  int64_t begin = 0;
  int64_t i = 0;
  while (i + kChunkSeparatorLength <= length) {
    bool match = true;
    for (int64_t k = 0; k < kChunkSeparatorLength && match; ++k)
      match = prompt[i + k] == kChunkSeparator[static_cast<size_t>(k)];
    if (match) {
      segments.push_back({begin, i - begin});
      i += kChunkSeparatorLength;
      begin = i;
    } else {
      ++i;
    }
  }
  segments.push_back({begin, length - begin});
  return segments;
}

BlockHash chunk_content_hash(const int32_t* tokens, int64_t length) {
  const XXH128_hash_t h = XXH3_128bits(tokens, static_cast<size_t>(length) * sizeof(int32_t));
  return {h.low64, h.high64};
}

}  // namespace kvsim
