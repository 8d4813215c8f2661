#pragma once
// Selective recompute over reused KV (CacheBlend: Yao et al., "CacheBlend:
// Fast Large Language Model Serving for RAG with Cached Knowledge Fusion",
// EuroSys 2025). Chunks whose KV was computed apart from each other (seed
// 003's chunk cache) are placed in a sequence's blocks; attention across
// chunks is then missing from their KV. CacheBlend restores part of it: the
// first layer is recomputed for every token, the tokens whose next-layer KV
// deviates most from the cached KV ("high-KV-deviation" tokens) are picked,
// and only those go on through the remaining layers, each attending
// everything before it, their K/V overwriting the cached rows.
//
// Here: rows [0, first_new) of the sequence hold placed KV, rows
// [first_new, n) are new (the question). Layer 0 runs on every row. At
// layer 1 every row's K/V is computed from layer 0's output and compared
// with the cached rows (sum of squared differences over K and V); in each
// segment the ceil(ratio x length) rows that deviate most (ties: the
// earlier row) are kept with every new row, and only they run layers 1..
// (one selection; CacheBlend narrows it gradually over layers). A row
// outside every segment and before first_new keeps its cached KV from
// layer 1 on. With one layer the selecting layer is the only one.
//
// ratio 1 recomputes every row at every layer: the same matrices, the same
// attention calls and the same order as llama2_forward over the whole
// prompt, so the KV and logits equal a full prefill bit for bit. ratio 0
// recomputes nothing: the new rows are prefilled over the placed KV as
// plain reuse does.
#include <cstdint>
#include <span>
#include <vector>

#include "kernels/llama2_model.hpp"

namespace kvsim::kernels {

struct RecomputeSegment {
  int64_t begin = 0;   // first row
  int64_t length = 0;  // rows
};

struct SelectiveRecomputeResult {
  std::vector<float> logits;    // of the last row
  int64_t recomputed_rows = 0;  // rows before first_new that ran every layer
};

// tokens[0, n) sit at rows and positions 0.. of the sequence under
// `block_table` in `pool`; segments lie within [0, first_new), in order and
// disjoint; 0 <= ratio <= 1; first_new < n. Throws std::invalid_argument
// otherwise.
SelectiveRecomputeResult llama2_forward_selective(const Llama2Weights& w, KvPool& pool,
                                                  std::span<const int32_t> block_table,
                                                  const int32_t* tokens, int64_t n,
                                                  int64_t first_new,
                                                  std::span<const RecomputeSegment> segments,
                                                  double ratio);

// The rows kept in each segment: the ceil(ratio x length) with the largest
// deviation (ties: the earlier row), in row order. deviation[i] is row i's.
std::vector<int64_t> high_deviation_rows(std::span<const double> deviation,
                                         std::span<const RecomputeSegment> segments, double ratio);

}  // namespace kvsim::kernels
