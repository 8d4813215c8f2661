#pragma once
// Seed 003's chunk-isolated attention mask (vllm-ascend get_chunk_aware_mask):
// system-prompt tokens attend causally; a chunk's tokens see the system
// prompt and their own chunk causally, never another chunk; the question
// sees everything before it. chunk_ids: -1 system prompt, >= 0 chunk id,
// -2 question. The result is [n, n], 1 where query i may attend key j.
#include <cstdint>
#include <span>
#include <vector>

namespace kvsim::kernels {

// How a chunk's KV is computed where it is cached, which decides what its
// cache key must cover (sim/cache/chunk_prompt.hpp).
enum class ChunkAttention {
  // Seed 003 §1.2 and §3.7: a chunk token sees the system prompt and its own
  // chunk causally (chunk_isolated_mask below). The KV then depends on the
  // system prompt, so the key covers it.
  system_prompt,
  // The chunk alone, attending only itself: the key is its content only.
  isolated,
};

constexpr int32_t kSystemPromptChunk = -1;
constexpr int32_t kQuestionChunk = -2;

std::vector<uint8_t> chunk_isolated_mask(std::span<const int32_t> chunk_ids);

}  // namespace kvsim::kernels
