#pragma once
// Seed 003's chunked prompt, `sys_prompt + "##" + chunk_1 + ... + "##" +
// question`, at the level kvsim sees it: token ids. It sits below both the
// `rag` workload that writes such prompts and the chunk cache that reads
// them (sim/cache/chunk_lru_policy), so neither includes the other.
//
// The separator "##" is the reserved token-id sequence kChunkSeparator
// ({0, 0}). Token id 0 is <unk> in the Llama/llama2.c vocabularies, which no
// real text tokenises to; the `rag` workload draws every other token (system
// prompt, documents, question, reply) from [1, vocab), so the separator
// appears exactly between segments and never by accident. Policies find the
// segments by scanning the prompt for it, as the seed's InputProcessor does,
// never from side information.
#include <array>
#include <cstdint>
#include <vector>

namespace kvsim {

constexpr int32_t kChunkSeparatorToken = 0;
constexpr std::array<int32_t, 2> kChunkSeparator = {kChunkSeparatorToken, kChunkSeparatorToken};
constexpr int64_t kChunkSeparatorLength = static_cast<int64_t>(kChunkSeparator.size());

// One segment's content, separator excluded: tokens [begin, begin + length).
struct PromptSegment {
  int64_t begin = 0;
  int64_t length = 0;
};

// The segments of a prompt in order: the system prompt (possibly empty),
// each chunk, and last the question (what follows the last separator). A
// prompt without a separator is one segment.
std::vector<PromptSegment> split_chunked_prompt(const int32_t* prompt, int64_t length);

}  // namespace kvsim
