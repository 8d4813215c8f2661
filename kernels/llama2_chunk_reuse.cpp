#include "kernels/llama2_chunk_reuse.hpp"

#include <fmt/format.h>

#include <algorithm>
#include <cmath>
#include <numeric>
#include <optional>
#include <stdexcept>

#include "kernels/chunk_remap.hpp"
#include "kernels/llama2_selective_recompute.hpp"

namespace kvsim::kernels {
namespace {

std::vector<int32_t> iota_table(int64_t first, int64_t count) {
  std::vector<int32_t> t(static_cast<size_t>(count));
  std::iota(t.begin(), t.end(), static_cast<int32_t>(first));
  return t;
}

int64_t argmax(const std::vector<float>& v) {
  return std::max_element(v.begin(), v.end()) - v.begin();
}

void check_options(const Llama2Config& c, const std::vector<int32_t>& question, int64_t n,
                   const ChunkReuseOptions& o) {
  if (question.empty()) throw std::invalid_argument("chunk reuse: the question has no token");
  if (o.block_size <= 0) throw std::invalid_argument("chunk reuse: block size must be positive");
  if (!(o.recompute_ratio >= 0.0 && o.recompute_ratio <= 1.0))
    throw std::invalid_argument("chunk reuse: the recompute ratio must lie in [0, 1]");
  if (o.generated_tokens < 0 || o.virtual_pos_start < 0)
    throw std::invalid_argument("chunk reuse: generated tokens and virtual position must be >= 0");
  if (n + o.generated_tokens > c.seq_len)
    throw std::invalid_argument(fmt::format(
        "the prompt has {} tokens and {} are generated, more than the model's {} positions", n,
        o.generated_tokens, c.seq_len));
}

// Max and mean |a - b| over rows [0, rows) of two pools' K and V, every layer and head.
void kv_difference(const KvPool& a, std::span<const int32_t> ta, const KvPool& b,
                   std::span<const int32_t> tb, int64_t rows, ChunkReuseResult& r) {
  const int64_t bs = a.block_tokens(), d = a.head_dim();
  std::vector<float> x(static_cast<size_t>(d)), y(x.size());
  double sum = 0;
  int64_t count = 0;
  for (int64_t row = 0; row < rows; ++row)
    for (int64_t l = 0; l < a.layers(); ++l)
      for (int64_t h = 0; h < a.kv_heads(); ++h)
        for (KvPart part : {KvPart::key, KvPart::value}) {
          a.read_row(ta[static_cast<size_t>(row / bs)], part, l, row % bs, h, x.data());
          b.read_row(tb[static_cast<size_t>(row / bs)], part, l, row % bs, h, y.data());
          for (int64_t j = 0; j < d; ++j) {
            const double diff = std::abs(static_cast<double>(x[static_cast<size_t>(j)]) -
                                         y[static_cast<size_t>(j)]);
            r.kv_max_abs_diff = std::max(r.kv_max_abs_diff, diff);
            sum += diff;
            ++count;
          }
        }
  r.kv_mean_abs_diff = count > 0 ? sum / static_cast<double>(count) : 0.0;
}

// The logits' and the placed rows' differences, then the continuation: the
// full path's greedy tokens fed to both caches, top-1 compared per position.
void compare_with_full(const Llama2Weights& w, KvPool& full, KvPool& reuse,
                       std::span<const int32_t> table, int64_t n, int64_t generated,
                       ChunkReuseResult& r) {
  double sum = 0;
  for (size_t i = 0; i < r.full_logits.size(); ++i) {
    const double d = std::abs(static_cast<double>(r.full_logits[i]) - r.reuse_logits[i]);
    r.max_abs_diff = std::max(r.max_abs_diff, d);
    sum += d;
  }
  r.mean_abs_diff = r.full_logits.empty() ? 0 : sum / static_cast<double>(r.full_logits.size());
  kv_difference(full, table, reuse, table, r.placed_tokens, r);
  std::vector<float> full_next = r.full_logits, reuse_next = r.reuse_logits;
  for (int64_t g = 0; g < generated; ++g) {
    const auto token = static_cast<int32_t>(argmax(full_next));
    ++r.generated;
    if (argmax(reuse_next) == token) ++r.top1_agreements;
    if (g + 1 == generated) break;
    full_next = llama2_forward(w, full, table, &token, 1, n + g);
    reuse_next = llama2_forward(w, reuse, table, &token, 1, n + g);
  }
}

}  // namespace

KvPool place_chunks(const Llama2Weights& w, const std::vector<std::vector<int32_t>>& units,
                    const ChunkReuseOptions& o, int64_t rows,
                    std::vector<RecomputeSegment>& segments) {
  const Llama2Config& c = w.config;
  const int64_t bs = o.block_size;
  if (bs <= 0) throw std::invalid_argument("chunk reuse: block size must be positive");
  const auto blocks = [bs](int64_t tokens) { return (tokens + bs - 1) / bs; };
  const auto pool = [&](int64_t n) {
    return KvPool(std::max<int64_t>(blocks(n), 1), c.n_layers, bs, c.n_kv_heads, c.head_size(),
                  o.kv_dtype);
  };
  int64_t placed = 0;
  for (const auto& u : units) placed += static_cast<int64_t>(u.size());
  rows = std::max(rows, placed);
  const auto table = iota_table(0, blocks(rows));
  KvPool main_pool = pool(rows);
  segments.clear();
  // The system prompt (unit 0) sits at [vps, vps + S) in its chunk-pool
  // blocks; under system_prompt each later unit is computed in a pool of its
  // own whose first S rows are the system prompt's rows, copied as they are.
  KvPool system_pool = pool(units.empty() ? 1 : static_cast<int64_t>(units.front().size()));
  const int64_t vps = o.virtual_pos_start;
  int64_t position = 0, system_len = 0;
  for (size_t i = 0; i < units.size(); ++i) {
    const auto len = static_cast<int64_t>(units[i].size());
    if (len == 0) continue;
    const bool after_system = i > 0 && o.attention == ChunkAttention::system_prompt;
    const int64_t first_row = after_system ? system_len : 0;
    std::optional<KvPool> chunk;
    if (i > 0) chunk.emplace(pool(first_row + len));
    KvPool& where = i == 0 ? system_pool : *chunk;
    const auto chunk_table = iota_table(0, blocks(first_row + len));
    if (after_system)  // the system prompt's rows as context: a copy, no re-rotation
      remap_chunk(system_pool, where,
                  {chunk_table, 0, 0, chunk_table, 0, system_len, w.rope_theta, w.rope_style});
    // Rows first_row.. of its blocks, keys rotated at vps + first_row..
    (void)llama2_forward(w, where, chunk_table, units[i].data(), len, first_row, vps);
    remap_chunk(where, main_pool,
                {chunk_table, first_row, vps + first_row, table, position, len, w.rope_theta,
                 w.rope_style});
    if (i == 0) system_len = len;
    segments.push_back({position, len});
    position += len;
  }
  return main_pool;
}

ChunkReuseResult chunk_reuse_logits(const Llama2Weights& w,
                                    const std::vector<std::vector<int32_t>>& units,
                                    const std::vector<int32_t>& question,
                                    const ChunkReuseOptions& o) {
  const Llama2Config& c = w.config;
  std::vector<int32_t> prompt;
  for (const auto& u : units) prompt.insert(prompt.end(), u.begin(), u.end());
  prompt.insert(prompt.end(), question.begin(), question.end());
  const auto n = static_cast<int64_t>(prompt.size());
  check_options(c, question, n, o);
  const int64_t bs = o.block_size, total = n + o.generated_tokens;
  const auto blocks = [bs](int64_t tokens) { return (tokens + bs - 1) / bs; };
  const auto pool = [&](int64_t rows) {
    return KvPool(std::max<int64_t>(blocks(rows), 1), c.n_layers, bs, c.n_kv_heads, c.head_size(),
                  o.kv_dtype);
  };

  ChunkReuseResult r;
  r.units = static_cast<int64_t>(units.size());
  r.prompt_tokens = n;
  KvPool full = pool(total);
  const auto table = iota_table(0, blocks(total));
  r.full_logits = llama2_forward(w, full, table, prompt.data(), n, 0);

  std::vector<RecomputeSegment> segments;
  KvPool main_pool = place_chunks(w, units, o, total, segments);
  const int64_t position = segments.empty() ? 0 : segments.back().begin + segments.back().length;
  r.placed_tokens = position;
  const SelectiveRecomputeResult sr = llama2_forward_selective(
      w, main_pool, table, prompt.data(), n, position, segments, o.recompute_ratio);
  r.reuse_logits = sr.logits;
  r.recomputed_tokens = sr.recomputed_rows;
  compare_with_full(w, full, main_pool, table, n, o.generated_tokens, r);
  return r;
}

ChunkReuseResult prefix_reuse_logits(const Llama2Weights& w, const std::vector<int32_t>& prompt,
                                     int64_t cached, const ChunkReuseOptions& o) {
  const Llama2Config& c = w.config;
  const auto n = static_cast<int64_t>(prompt.size());
  check_options(c, prompt, n, o);
  if (cached < 0 || cached >= n)
    throw std::invalid_argument("prefix reuse: the hit must leave at least one token to compute");
  const int64_t bs = o.block_size, total = n + o.generated_tokens;
  const int64_t blocks = (total + bs - 1) / bs;
  KvPool full(blocks, c.n_layers, bs, c.n_kv_heads, c.head_size(), o.kv_dtype);
  KvPool reuse(blocks, c.n_layers, bs, c.n_kv_heads, c.head_size(), o.kv_dtype);
  const auto table = iota_table(0, blocks);
  ChunkReuseResult r;
  r.prompt_tokens = n;
  r.placed_tokens = cached;
  r.full_logits = llama2_forward(w, full, table, prompt.data(), n, 0);
  if (cached > 0) (void)llama2_forward(w, reuse, table, prompt.data(), cached, 0);
  r.reuse_logits = llama2_forward(w, reuse, table, prompt.data() + cached, n - cached, cached);
  compare_with_full(w, full, reuse, table, n, o.generated_tokens, r);
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
