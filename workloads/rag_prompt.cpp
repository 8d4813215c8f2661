#include "workloads/rag_prompt.hpp"

#include <cstddef>

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

}  // namespace kvsim
