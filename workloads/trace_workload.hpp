#pragma once
// Trace replay (`workload.trace`): the request content kvsim gives a recorded
// request, exposed for tests and tools.
#include <cstdint>
#include <vector>

#include "workloads/token_content.hpp"

namespace kvsim {

// Appends the prompt of a Mooncake request: trace block i (hash id
// hash_ids[i]) holds tokens 512*i .. 512*i + 511, and token j of it is a pure
// function of (seed, pass, hash id, j). Two requests whose first k ids agree
// therefore have identical first k*512 tokens, and the paged cache's chained
// block hashes (blocks of block_size tokens) make them share the first
// floor(k*512 / block_size) blocks, for any block size. Where a block
// straddles the end of the shared ids (block_size does not divide 512), it is
// shared only if the m tokens it takes from the next trace block also agree,
// which happens with probability vocab_size^-m (never for distinct content in
// practice, and a miss is what a real engine would see as well).
// `pass` separates the passes of `loop`: pass 1 is new content, not a repeat.
void append_mooncake_prompt(TokenContent& out, const std::vector<int64_t>& hash_ids,
                            int64_t input_tokens, uint64_t seed, int64_t pass,
                            const FastModulo& vocabulary);

}  // namespace kvsim
