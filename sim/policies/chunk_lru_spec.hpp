#pragma once
// chunk_lru (seed 003) as a policy: sim/policies/chunk_lru_spec.cpp.
#include "sim/cache/chunk_lru_policy.hpp"

namespace kvsim {

// Params with the declared defaults of max_chunks, max_chunk_tokens and
// virtual_pos_start (for code that builds the policy without a scenario).
ChunkLruParams declared_chunk_lru_params();

}  // namespace kvsim
