// llama-server's host prompt cache, as server_prompt_cache::alloc / load /
// update do it (tools/server/server-task.cpp, ggml-org/llama.cpp 17f5f8a8).
#include "sim/cache/llama_prompt_cache.hpp"

#include <algorithm>
#include <iterator>
#include <stdexcept>

namespace kvsim {

int64_t llama_common_prefix(const std::vector<int32_t>& a, const std::vector<int32_t>& b) {
  const auto n = std::min(a.size(), b.size());
  const auto end = std::mismatch(a.begin(), a.begin() + static_cast<std::ptrdiff_t>(n), b.begin());
  return static_cast<int64_t>(end.first - a.begin());
}

LlamaPromptCache::LlamaPromptCache(Bytes limit_bytes, int64_t limit_tokens, Bytes cell_bytes)
    : limit_bytes_(limit_bytes), limit_tokens_(limit_tokens), cell_bytes_(cell_bytes) {
  if (cell_bytes <= 0) throw std::invalid_argument("llama prompt cache: cells of no bytes");
}

bool LlamaPromptCache::save(const std::vector<int32_t>& tokens) {
  const auto n = static_cast<int64_t>(tokens.size());
  for (const auto& s : states_)
    if (llama_common_prefix(s, tokens) == n) return false;  // "already in the cache"
  // "removing obsolete cached prompt": entries the new one holds whole.
  states_.remove_if([&](const std::vector<int32_t>& s) {
    return llama_common_prefix(s, tokens) == static_cast<int64_t>(s.size());
  });
  states_.push_back(tokens);
  return true;
}

std::optional<size_t> LlamaPromptCache::best(const std::vector<int32_t>& slot_tokens,
                                             const std::vector<int32_t>& prompt) const {
  if (prompt.empty()) return std::nullopt;
  const int64_t lcp = llama_common_prefix(slot_tokens, prompt);
  // llama.cpp divides by the slot's size; an empty slot gives -1 in newer
  // versions ("any cache entry wins") and NaN in this one, where no entry
  // then wins. The newer rule is taken: an empty slot is what it fixes.
  double keep_best = slot_tokens.empty() ? -1.0 : double(lcp) / double(slot_tokens.size());
  double sim_best = double(lcp) / double(prompt.size());
  std::optional<size_t> found;
  size_t i = 0;
  for (auto it = states_.begin(); it != states_.end(); ++it, ++i) {
    const int64_t cur = llama_common_prefix(*it, prompt);
    const double keep = double(cur) / double(it->size());
    const double sim = double(cur) / double(prompt.size());
    if (keep < 0.25) continue;  // "don't trash large prompts"
    if (keep_best < keep && sim_best < sim) {
      keep_best = keep;
      sim_best = sim;
      found = i;
    }
  }
  return found;
}

std::vector<int32_t> LlamaPromptCache::take(size_t index) {
  if (index >= states_.size()) throw std::logic_error("llama prompt cache: no such entry");
  auto it = std::next(states_.begin(), static_cast<std::ptrdiff_t>(index));
  std::vector<int32_t> tokens = std::move(*it);
  states_.erase(it);
  return tokens;
}

int64_t LlamaPromptCache::tokens() const {
  int64_t n = 0;
  for (const auto& s : states_) n += static_cast<int64_t>(s.size());
  return n;
}

void LlamaPromptCache::update() {
  if (limit_bytes_ > 0)
    while (states_.size() > 1 && bytes() > limit_bytes_) states_.pop_front();
  // The token limit grows to what the byte limit holds at the entries'
  // bytes per token (one cell each here, so limit_bytes / cell_bytes).
  const int64_t limit = limit_bytes_ > 0
                            ? std::max<int64_t>(limit_tokens_, limit_bytes_ / cell_bytes_)
                            : limit_tokens_;
  if (limit_tokens_ > 0)
    while (states_.size() > 1 && tokens() > limit) states_.pop_front();
}

const std::vector<int32_t>& LlamaPromptCache::entry(size_t index) const {
  if (index >= states_.size()) throw std::logic_error("llama prompt cache: no such entry");
  return *std::next(states_.begin(), static_cast<std::ptrdiff_t>(index));
}

}  // namespace kvsim
