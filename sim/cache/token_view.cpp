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
    const TokenRun& run = content->run_holding(local);
    if (local + count <= run.start + run.length) {
      return chained_stream_block_hash(parent, run.key, content->vocab_size(), local - run.start,
                                       count);
    }
  }
  return chained_block_hash(parent, ids(begin, count, scratch), static_cast<size_t>(count));
}

void TokenView::extend_block_hashes(std::vector<BlockHash>& hashes, int64_t blocks,
                                    int64_t block_size, int32_t* scratch) const {
  // The run of each part that the last block lay in: blocks come in order,
  // so each part's runs are walked once.
  const TokenRun* run[2] = {nullptr, nullptr};
  // One allocation for a prompt's blocks (exact: a waiting request's memo
  // holds only those); once generated blocks are added, room for every
  // block of the known content (a described output is known to its end:
  // one allocation for the rest of the sequence's life), and geometric
  // growth past it.
  if (static_cast<size_t>(std::max<int64_t>(blocks, 0)) > hashes.capacity()) {
    size_t room = std::max(static_cast<size_t>(blocks), 2 * hashes.capacity());
    if (!hashes.empty()) {
      const int64_t known =
          prompt_len +
          (output_content != nullptr ? static_cast<int64_t>(output_content->size()) : output_len);
      room = std::max(room, static_cast<size_t>(known / block_size));
    }
    hashes.reserve(room);
  }
  for (auto b = static_cast<int64_t>(hashes.size()); b < blocks; ++b) {
    const BlockHash parent = b == 0 ? BlockHash{} : hashes[static_cast<size_t>(b - 1)];
    const int64_t begin = b * block_size;
    int part = -1;
    if (begin + block_size <= prompt_len)
      part = 0;
    else if (begin >= prompt_len)
      part = 1;
    const TokenContent* content = part == 0 ? prompt_content : part == 1 ? output_content : nullptr;
    if (content != nullptr) {
      const int64_t local = part == 0 ? begin : begin - prompt_len;
      const TokenRun*& r = run[part];
      if (r == nullptr)
        r = &content->run_at(local);
      else
        while (local >= r->start + r->length) ++r;
      if (local + block_size <= r->start + r->length) {
        hashes.push_back(chained_stream_block_hash(parent, r->key, content->vocab_size(),
                                                   local - r->start, block_size));
        continue;
      }
    }
    hashes.push_back(chained_block_hash(parent, ids(begin, block_size, scratch),
                                        static_cast<size_t>(block_size)));
  }
}

}  // namespace kvsim
