#pragma once
// What position-independent chunk reuse (seed 003) does to a real model's
// output: the logits after a chunked prompt computed two ways with
// stories260K (llama2.c),
//  - full: the whole prompt prefilled causally (every token sees everything
//    before it), as without a chunk cache;
//  - reuse: each cached unit (a segment with its separator) prefilled alone
//    at virtual positions in blocks of a chunk pool, copied into the main
//    pool and re-rotated to its real position (kernels/chunk_remap), then
//    the question prefilled at its real position attending to everything.
// The units never saw each other, so the logits differ: users need that
// number before trusting the cache. With no unit (a prompt without
// separator) both paths are the same computation and the difference is 0.
#include <cstdint>
#include <string>
#include <vector>

#include "kernels/kv_dtype.hpp"
#include "kernels/llama2_model.hpp"
#include "kernels/llama2_tokenizer.hpp"

namespace kvsim::kernels {

struct ChunkReuseOptions {
  int64_t virtual_pos_start = 4096;  // seed 003 VIRTUAL_POS_START
  int64_t block_size = 16;
  KvDtype kv_dtype = KvDtype::fp32;
};

struct ChunkReuseResult {
  std::vector<float> full_logits, reuse_logits;  // of the last prompt token
  double max_abs_diff = 0, mean_abs_diff = 0;
  int64_t units = 0, prompt_tokens = 0;
};

// `units`: the cached segments in order, each with its separator tokens
// (the first with BOS); `question`: the tokens after the last separator
// (at least one). Throws std::invalid_argument when the prompt is longer
// than the model's seq_len or the question is empty.
ChunkReuseResult chunk_reuse_logits(const Llama2Weights& w,
                                    const std::vector<std::vector<int32_t>>& units,
                                    const std::vector<int32_t>& question,
                                    const ChunkReuseOptions& options);

// The same from text: `text` split on "##" (seed 003's separator), each
// segment but the last tokenised with its "##" as one unit (the first with
// BOS), the last as the question. Without "##" the whole text is the
// question and the difference is 0.
ChunkReuseResult chunk_reuse_logits_for_text(const Llama2Weights& w, const Llama2Tokenizer& tok,
                                             const std::string& text,
                                             const ChunkReuseOptions& options);

}  // namespace kvsim::kernels
