#include "sim/cache/chunk_prompt.hpp"

#include <xxhash.h>

namespace kvsim {

BlockHash chunk_content_hash(const int32_t* tokens, int64_t length) {
  const XXH128_hash_t h = XXH3_128bits(tokens, static_cast<size_t>(length) * sizeof(int32_t));
  return {h.low64, h.high64};
}

}  // namespace kvsim
