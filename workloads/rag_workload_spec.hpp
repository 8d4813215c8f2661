#pragma once
// `kind: rag` (SPEC 5, seed 003): sys_prompt + "##" + chunk_1 + ... + "##" + question.
// Filled in by the chunk_lru issue (issue 5).
#include <cstdint>

namespace kvsim {

struct RagWorkloadSpec {};

}  // namespace kvsim
