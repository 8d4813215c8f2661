#pragma once
// The chunk cache's key for a segment of a chunked prompt (seed 003); the
// prompt format itself is workloads/rag_prompt.hpp.
#include <cstdint>
#include <vector>

#include "kernels/chunk_mask.hpp"
#include "sim/cache/block_hash.hpp"
#include "workloads/rag_prompt.hpp"

namespace kvsim {

// XXH3-128 over a segment's token ids alone (no position, no parent): the
// chunk cache's key, identical wherever the content appears (seed 003 §3.1).
BlockHash chunk_content_hash(const int32_t* tokens, int64_t length);

// A chunk after the system prompt computed attending it
// (ChunkAttention::system_prompt) is keyed by
// chained_block_hash(system prompt's key, chunk tokens): found by any
// request with the same system prompt and chunk, wherever the chunk sits.
using kernels::ChunkAttention;

// The key of every segment before the question, in order: segment 0 (the
// system prompt) by content; the others by content, or after the system
// prompt's key under ChunkAttention::system_prompt.
std::vector<BlockHash> chunk_segment_keys(const int32_t* prompt,
                                          const std::vector<PromptSegment>& segments,
                                          ChunkAttention attention);

}  // namespace kvsim
