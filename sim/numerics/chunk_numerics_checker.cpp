#include "sim/numerics/chunk_numerics_checker.hpp"

#include <algorithm>

#include "kernels/chunk_remap.hpp"
#include "sim/cache/chunk_lru_policy.hpp"
#include "sim/cache/chunk_prompt.hpp"

namespace kvsim::numerics {

ChunkLruNumericsChecker::ChunkLruNumericsChecker(const CheckerParams& p, int64_t chunk_blocks,
                                                 int64_t virtual_pos_start)
    : NumericsChecker(p),
      chunk_pool_(std::max<int64_t>(chunk_blocks, 1), p.shape.layers, p.block_size,
                  p.shape.kv_heads, p.shape.head_dim, p.dtype),
      block_owner_(static_cast<size_t>(std::max<int64_t>(chunk_blocks, 1))),
      owned_(block_owner_.size(), 0),
      virtual_pos_start_(virtual_pos_start) {}

void ChunkLruNumericsChecker::write_rows(kernels::KvPool& pool, const std::vector<int32_t>& blocks,
                                         int64_t first_row, const TokenView& tokens,
                                         int64_t first_token, int64_t n, int64_t first_position) {
  const SyntheticShape& sh = params().shape;
  const int64_t bs = params().block_size, d = sh.head_dim;
  std::vector<float> k(static_cast<size_t>(sh.kv_heads * d)), v(k.size());
  for (int64_t t = 0; t < n; ++t) {
    const int32_t token = tokens.at(first_token + t);
    const int64_t row = first_row + t;
    const int64_t block = blocks[static_cast<size_t>(row / bs)];
    for (int64_t l = 0; l < sh.layers; ++l) {
      synthetic_rows(sh, Tensor::key, token, first_position + t, l, k.data());
      synthetic_rows(sh, Tensor::value, token, first_position + t, l, v.data());
      for (int64_t h = 0; h < sh.kv_heads; ++h) {
        pool.write_row(block, KvPart::key, l, row % bs, h, k.data() + h * d);
        pool.write_row(block, KvPart::value, l, row % bs, h, v.data() + h * d);
      }
    }
  }
}

void ChunkLruNumericsChecker::place_chunks(const Sequence& seq, const ChunkLruPolicy& policy,
                                           int64_t cached) {
  const TokenView tokens = seq.tokens();
  const auto segments = split_chunked_prompt(tokens.prompt_ids(), tokens.prompt_len);
  const auto& table_ref = policy.block_table(seq.slot);
  const std::vector<int32_t> table(table_ref.begin(), table_ref.end());
  const SyntheticShape& sh = params().shape;
  // The policy's keys (a chunk after the system prompt may be keyed by both).
  const std::vector<BlockHash> keys =
      chunk_segment_keys(tokens.prompt_ids(), segments, policy.params().attention);
  int64_t position = 0;
  for (size_t i = 0; i + 1 < segments.size(); ++i) {
    const int64_t unit = segments[i].length + kChunkSeparatorLength;
    const int64_t placed = std::min(unit, cached - position);
    if (placed <= 0) break;
    const BlockHash& hash = keys[i];
    const auto& held = policy.chunk_pool().blocks_of(hash);
    if (held.empty()) {
      // Not cached (over max_chunk_tokens): prefilled at its real position.
      write_rows(shadow_pool(), table, position, tokens, position, placed, position);
    } else {
      const std::vector<int32_t> blocks(held.begin(), held.end());
      const bool current = std::all_of(blocks.begin(), blocks.end(), [&](int32_t b) {
        return owned_[static_cast<size_t>(b)] && block_owner_[static_cast<size_t>(b)] == hash;
      });
      // A chunk computed after the system prompt sits past it in the virtual
      // span (kernels/llama2_chunk_reuse.hpp).
      const int64_t after = i > 0 && policy.params().attention == ChunkAttention::system_prompt
                                ? segments[0].length + kChunkSeparatorLength
                                : 0;
      if (!current) {
        // Computed at its virtual position, into its chunk blocks.
        write_rows(chunk_pool_, blocks, 0, tokens, position, unit, virtual_pos_start_ + after);
        for (int32_t b : blocks) {
          block_owner_[static_cast<size_t>(b)] = hash;
          owned_[static_cast<size_t>(b)] = 1;
        }
      }
      kernels::remap_chunk(chunk_pool_, shadow_pool(),
                           {blocks, 0, virtual_position() + after, table, position, placed,
                            sh.rope_theta, sh.rope_style});
    }
    position += unit;
  }
}

void ChunkLruNumericsChecker::on_step_done(const ScheduledBatch& batch, const KvCachePolicy& policy,
                                           TimeNs now) {
  for (const Sequence* seq : batch.preempted)
    if (seq->state != SeqState::swapped) placed_.erase(seq->request.id);  // recompute: placed again
  if (const auto* chunk = dynamic_cast<const ChunkLruPolicy*>(&policy)) {
    for (const ScheduledSeq& item : batch.items) {
      const Sequence& seq = *item.seq;
      const int64_t first = seq.computed - item.tokens;  // tokens in place before this step
      if (placed_.insert(seq.request.id).second && first > 0) place_chunks(seq, *chunk, first);
    }
  }
  NumericsChecker::on_step_done(batch, policy, now);
}

void ChunkLruNumericsChecker::on_release(const Sequence& seq) {
  placed_.erase(seq.request.id);
  NumericsChecker::on_release(seq);
}

}  // namespace kvsim::numerics
