#pragma once
// The references a sliding_window or context-reset run is compared with.
//
// Recompute from the kept tokens: an independent forward pass over the
// run's token list (its own dense K/V, the naive attention of
// kernels/attention_dense.cpp; no block table, no Genie buffer) in which
// position p attends only to the keys the policy keeps for it. Positions are
// those the tokens were run at: a sliding window does not re-rotate the
// keys it keeps (neither Genie's SHIFT_CONCAT/POINTER_SHIFT/SMART_MASK
// buffers nor vLLM's paged window move a key to a new position; only
// llama.cpp's context shift does, seed 004), so a kept key still carries
// RoPE at its original position and the reference must use that position
// too. A kept token's deeper-layer K/V were computed when it ran, while the
// tokens before it were still in view: the reference computes every token
// once, in order, with its own window, as the cache did, and never
// recomputes a kept token from a shorter context. After a context reset the
// cache does recompute: each reset starts a new sequence (BOS, the n_keep
// tokens, then the tokens fed since) at positions 0...
#include <cstdint>
#include <vector>

#include "cli/generate/llama2_generate.hpp"

namespace kvsim::kernels {

// Logits of every position p of `tokens` (teacher-forced), attending to
// keys [first_key[p], p] at their own positions; K/V stored through `dtype`
// (fp32, fp16, bf16; int8 is kept in fp32 here).
std::vector<std::vector<float>> llama2_recompute_logits(const Llama2Weights& weights,
                                                        const std::vector<int32_t>& tokens,
                                                        const std::vector<int64_t>& first_key,
                                                        KvDtype dtype);

// The last token's logits of a prefill of tokens[0..n) alone at positions
// pos0.. (causal, an empty cache): what re-encoding the kept tokens would
// give, their deeper-layer K/V computed without the tokens before pos0.
std::vector<float> llama2_prefill_logits(const Llama2Weights& weights, const int32_t* tokens,
                                         int64_t n, int64_t pos0, KvDtype dtype);

// The first key each position of a sliding_window run attends to:
// over a Genie mode the `window` newest keys in the cache when its pass
// began (AR-32 prefill passes from 0, then one pass per position) plus its
// pass's own; over paged (vLLM) the window includes the query itself.
std::vector<int64_t> sliding_window_first_keys(int64_t n_tokens, int64_t n_prompt, int64_t window,
                                               bool genie, int64_t prefill_pass);

// Fills r.window's comparisons: with the recompute from the kept tokens
// (r.logits, one per position from n_prompt - 1), with `full` (the
// full-context run of the same prompt and steps) and, under a window, with
// a fresh prefill of each position's kept tokens.
void compare_window_run(const Llama2Weights& weights, const GenerateOptions& options,
                        int64_t n_prompt, const GenerateResult& full, GenerateResult& r);

}  // namespace kvsim::kernels
