#include "cli/generate/llama2_chunk_reuse.hpp"

#include <fmt/format.h>

#include <cmath>
#include <numeric>
#include <stdexcept>

#include "kernels/chunk_remap.hpp"

namespace kvsim::kernels {
namespace {

std::vector<int32_t> iota_table(int64_t first, int64_t count) {
  std::vector<int32_t> t(static_cast<size_t>(count));
  std::iota(t.begin(), t.end(), static_cast<int32_t>(first));
  return t;
}

}  // namespace

ChunkReuseResult chunk_reuse_logits(const Llama2Weights& w,
                                    const std::vector<std::vector<int32_t>>& units,
                                    const std::vector<int32_t>& question,
                                    const ChunkReuseOptions& o) {
  const Llama2Config& c = w.config;
  if (question.empty()) throw std::invalid_argument("chunk reuse: the question has no token");
  if (o.block_size <= 0) throw std::invalid_argument("chunk reuse: block size must be positive");
  std::vector<int32_t> prompt;
  for (const auto& u : units) prompt.insert(prompt.end(), u.begin(), u.end());
  prompt.insert(prompt.end(), question.begin(), question.end());
  const auto n = static_cast<int64_t>(prompt.size());
  if (n > c.seq_len)
    throw std::invalid_argument(
        fmt::format("the prompt has {} tokens, more than the model's {} positions", n, c.seq_len));
  const int64_t bs = o.block_size;
  const auto blocks = [bs](int64_t tokens) { return (tokens + bs - 1) / bs; };

  ChunkReuseResult r;
  r.units = static_cast<int64_t>(units.size());
  r.prompt_tokens = n;
  {
    KvPool full(blocks(n), c.n_layers, bs, c.n_kv_heads, c.head_size(), o.kv_dtype);
    const auto table = iota_table(0, blocks(n));
    r.full_logits = llama2_forward(w, full, table, prompt.data(), n, 0);
  }
  // The chunk pool gives each unit blocks of its own (seed 003 ChunkBlockPool).
  int64_t chunk_blocks = 0;
  for (const auto& u : units) chunk_blocks += blocks(static_cast<int64_t>(u.size()));
  KvPool chunk_pool(std::max<int64_t>(chunk_blocks, 1), c.n_layers, bs, c.n_kv_heads, c.head_size(),
                    o.kv_dtype);
  KvPool main_pool(blocks(n), c.n_layers, bs, c.n_kv_heads, c.head_size(), o.kv_dtype);
  const auto main_table = iota_table(0, blocks(n));
  int64_t next_chunk_block = 0, position = 0;
  for (const auto& u : units) {
    const auto len = static_cast<int64_t>(u.size());
    if (len == 0) continue;
    const auto table = iota_table(next_chunk_block, blocks(len));
    next_chunk_block += blocks(len);
    // Computed alone: rows 0.. of its own blocks, rotated at virtual positions.
    (void)llama2_forward(w, chunk_pool, table, u.data(), len, 0, o.virtual_pos_start);
    remap_chunk(
        chunk_pool, main_pool,
        {table, 0, o.virtual_pos_start, main_table, position, len, w.rope_theta, w.rope_style});
    position += len;
  }
  r.reuse_logits = llama2_forward(w, main_pool, main_table, question.data(),
                                  static_cast<int64_t>(question.size()), position);
  double sum = 0;
  for (size_t i = 0; i < r.full_logits.size(); ++i) {
    const double d = std::abs(static_cast<double>(r.full_logits[i]) - r.reuse_logits[i]);
    r.max_abs_diff = std::max(r.max_abs_diff, d);
    sum += d;
  }
  r.mean_abs_diff = r.full_logits.empty() ? 0 : sum / static_cast<double>(r.full_logits.size());
  return r;
}

ChunkReuseResult chunk_reuse_logits_for_text(const Llama2Weights& w, const Llama2Tokenizer& tok,
                                             const std::string& text,
                                             const ChunkReuseOptions& options) {
  std::vector<std::string> segments;
  size_t start = 0;
  for (size_t at = text.find("##"); at != std::string::npos; at = text.find("##", start)) {
    segments.push_back(text.substr(start, at - start));
    start = at + 2;
  }
  segments.push_back(text.substr(start));
  std::vector<std::vector<int32_t>> units;
  for (size_t i = 0; i + 1 < segments.size(); ++i)
    units.push_back(tok.encode(segments[i] + "##", i == 0));
  const std::vector<int32_t> question = tok.encode(segments.back(), units.empty());
  return chunk_reuse_logits(w, units, question, options);
}

}  // namespace kvsim::kernels
