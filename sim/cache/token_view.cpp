#include "sim/cache/kv_cache_policy.hpp"

#include <algorithm>

namespace kvsim {

void TokenView::copy(int64_t begin, int64_t count, int32_t* dst) const {
  // The prompt part, then the output part, each in one call.
  const int64_t in_prompt = std::clamp<int64_t>(prompt_len - begin, 0, count);
  if (in_prompt > 0) {
    if (prompt)
      std::copy_n(prompt + begin, in_prompt, dst);
    else
      prompt_content->copy(begin, in_prompt, dst);
  }
  const int64_t rest = count - in_prompt;
  if (rest > 0) {
    const int64_t from = begin + in_prompt - prompt_len;
    if (output)
      std::copy_n(output + from, rest, dst + in_prompt);
    else
      output_content->copy(from, rest, dst + in_prompt);
  }
}

BlockHash TokenView::block_hash(const BlockHash& parent, int64_t begin, int64_t count,
                                int32_t* scratch) const {
  const TokenContent* content = nullptr;
  int64_t local = begin;
  if (begin + count <= prompt_len) {
    content = prompt_content;
  } else if (begin >= prompt_len) {
    content = output_content;
    local = begin - prompt_len;
  }
  if (content != nullptr) {
    const TokenRun& run = content->run_at(local);
    if (local + count <= run.start + run.length) {
      return chained_stream_block_hash(parent, run.key, content->vocab_size(), local - run.start,
                                       count);
    }
  }
  copy(begin, count, scratch);
  return chained_block_hash(parent, scratch, static_cast<size_t>(count));
}

}  // namespace kvsim
