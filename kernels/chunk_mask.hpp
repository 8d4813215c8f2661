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

constexpr int32_t kSystemPromptChunk = -1;
constexpr int32_t kQuestionChunk = -2;

std::vector<uint8_t> chunk_isolated_mask(std::span<const int32_t> chunk_ids);

}  // namespace kvsim::kernels
