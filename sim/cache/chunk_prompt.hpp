#pragma once
// The chunk cache's key for a segment of a chunked prompt (seed 003); the
// prompt format itself is workloads/rag_prompt.hpp.
#include <cstdint>

#include "sim/cache/block_hash.hpp"
#include "workloads/rag_prompt.hpp"

namespace kvsim {

// XXH3-128 over a segment's token ids alone (no position, no parent): the
// chunk cache's key, identical wherever the content appears (seed 003 §3.1).
BlockHash chunk_content_hash(const int32_t* tokens, int64_t length);

}  // namespace kvsim
