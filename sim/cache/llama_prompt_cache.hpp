#pragma once
// llama-server's host prompt cache (`--cache-ram`, server_prompt_cache in
// ggml-org/llama.cpp tools/server/server-task.{h,cpp}, stored version
// 17f5f8a8 / 0c0d0fdc; used by tools/server/server-context.cpp fb402660):
// the KV state of a slot's prompt, copied to host memory when the slot is
// handed to a request that would lose most of it, and copied back into a
// slot when a later request shares a long enough prefix with it.
//
//   save (alloc):  skipped when an entry already holds the whole prompt;
//                  entries the prompt holds whole are dropped first.
//   load:          the entry that beats the slot's own tokens on both keep
//                  (LCP / entry length) and similarity (LCP / prompt
//                  length), among entries keeping at least a quarter of
//                  themselves; the winner leaves the cache (its state goes
//                  into the slot).
//   update:        the oldest entries go while the bytes exceed the limit,
//                  or the tokens exceed max(n_ctx, limit / bytes per token);
//                  one entry always stays.
// Only the bookkeeping: the bytes an entry moves are its tokens x the
// cell bytes, priced by the pool over the host link.
#include <cstdint>
#include <list>
#include <optional>
#include <vector>

#include "base/units.hpp"

namespace kvsim {

// Longest common prefix of two token runs.
int64_t llama_common_prefix(const std::vector<int32_t>& a, const std::vector<int32_t>& b);

class LlamaPromptCache {
 public:
  // `limit_bytes` 0: no byte limit; `limit_tokens` (llama-server: n_ctx) 0:
  // none. `cell_bytes`: one token's state (K and V of every layer).
  LlamaPromptCache(Bytes limit_bytes, int64_t limit_tokens, Bytes cell_bytes);

  // Saves `tokens`; false when skipped (already held). Bytes saved: tokens x
  // cell_bytes.
  bool save(const std::vector<int32_t>& tokens);
  // The entry to restore for `prompt` into a slot holding `slot_tokens`, if
  // one beats it (see above); const.
  std::optional<size_t> best(const std::vector<int32_t>& slot_tokens,
                             const std::vector<int32_t>& prompt) const;
  // Takes entry `index` (from best()) out of the cache and returns its tokens.
  std::vector<int32_t> take(size_t index);
  void update();

  size_t entries() const { return states_.size(); }
  int64_t tokens() const;
  Bytes bytes() const { return tokens() * cell_bytes_; }
  // Entry `index` (oldest first), for tests.
  const std::vector<int32_t>& entry(size_t index) const;

 private:
  std::list<std::vector<int32_t>> states_;  // oldest first
  Bytes limit_bytes_;
  int64_t limit_tokens_;
  Bytes cell_bytes_;
};

}  // namespace kvsim
