#pragma once
// What position-independent chunk reuse (seed 003) does to a real model's
// output (llama2.c's stories260K, or any llama2 checkpoint): one chunked
// prompt computed two ways,
//  - full: the whole prompt prefilled causally (every token sees everything
//    before it), as without a chunk cache;
//  - reuse: the system prompt (the first unit) prefilled alone at virtual
//    positions [vps, vps + S) in a chunk pool; each later unit (a segment
//    with its separator) prefilled in its own blocks at virtual positions,
//    attending per `attention`:
//      system_prompt: the system prompt's chunk-pool rows, then itself
//        causally, at [vps + S, ...) (seed 003 §3.7's mask; the system
//        prompt's cached rows are the context, read where they are);
//      isolated: only itself, at [vps, ...);
//    every unit then copied into the main pool and its keys re-rotated to
//    its real position (kernels/chunk_remap), and the question prefilled at
//    its real position attending everything, after a selective recompute
//    of recompute_ratio of each unit's tokens when that is above 0
//    (kernels/llama2_selective_recompute.hpp).
// The result says how far the reuse is from the full prefill: the placed
// KV rows (every layer, K and V), the last prompt token's logits, and the
// greedy continuation (the full path's tokens fed to both; top-1 agreement
// per position). With no unit (a prompt without separator) both paths are
// the same computation and every difference is 0.
#include <cstdint>
#include <string>
#include <vector>

#include "kernels/chunk_mask.hpp"
#include "kernels/kv_dtype.hpp"
#include "kernels/llama2_model.hpp"
#include "kernels/llama2_selective_recompute.hpp"
#include "kernels/llama2_tokenizer.hpp"

namespace kvsim::kernels {

struct ChunkReuseOptions {
  int64_t virtual_pos_start = 4096;  // seed 003 VIRTUAL_POS_START
  int64_t block_size = 16;
  KvDtype kv_dtype = KvDtype::fp32;
  ChunkAttention attention = ChunkAttention::system_prompt;
  double recompute_ratio = 0;    // CacheBlend: 0 plain reuse, 1 a full prefill
  int64_t generated_tokens = 0;  // greedy positions compared after the prompt
};

struct ChunkReuseResult {
  std::vector<float> full_logits, reuse_logits;      // of the last prompt token
  double max_abs_diff = 0, mean_abs_diff = 0;        // of those logits
  double kv_max_abs_diff = 0, kv_mean_abs_diff = 0;  // placed rows, every layer, K and V
  int64_t units = 0, prompt_tokens = 0, placed_tokens = 0, recomputed_tokens = 0;
  int64_t generated = 0, top1_agreements = 0;  // positions compared / whose argmax agreed
};

// The reuse path's placement alone: every unit computed where the chunk
// cache computes it (per options.attention) and copied, re-rotated, into
// rows [0, placed) of a main pool of at least `rows` rows whose block table
// is 0, 1, 2, ...; `segments` receives each unit's rows. Exposed so tests
// can read what a chunk's cached KV saw.
KvPool place_chunks(const Llama2Weights& w, const std::vector<std::vector<int32_t>>& units,
                    const ChunkReuseOptions& options, int64_t rows,
                    std::vector<RecomputeSegment>& segments);

// `units`: the cached segments in order, each with its separator tokens
// (the first is the system prompt, with BOS); `question`: the tokens after
// the last separator (at least one). Throws std::invalid_argument when the
// prompt and the generated tokens exceed the model's seq_len, the question
// is empty or an option is out of range.
ChunkReuseResult chunk_reuse_logits(const Llama2Weights& w,
                                    const std::vector<std::vector<int32_t>>& units,
                                    const std::vector<int32_t>& question,
                                    const ChunkReuseOptions& options);

// Prefix reuse, as a paged prefix cache serves a hit: prompt[0, cached)
// computed by a pass of its own (an earlier request's), the rest over it,
// against one full pass. The difference is the arithmetic's alone (the
// same tokens at the same positions): 0 without a hit. 0 <= cached < n.
ChunkReuseResult prefix_reuse_logits(const Llama2Weights& w, const std::vector<int32_t>& prompt,
                                     int64_t cached, const ChunkReuseOptions& options);

// The same from text: `text` split on "##" (seed 003's separator), each
// segment but the last tokenised with its "##" as one unit (the first with
// BOS), the last as the question. Without "##" the whole text is the
// question and the difference is 0.
ChunkReuseResult chunk_reuse_logits_for_text(const Llama2Weights& w, const Llama2Tokenizer& tok,
                                             const std::string& text,
                                             const ChunkReuseOptions& options);

}  // namespace kvsim::kernels
