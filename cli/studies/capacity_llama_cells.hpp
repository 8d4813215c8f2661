#pragma once
// `kvsim capacity --policy llama_cells`: rows for llama.cpp's cell cache
// (seed 004) with ggml K/V types as --kv-dtype (f16, bf16, f32, q8_0,
// q4_0, q4_1, q5_0, q5_1; type_k = type_v). The cache is one allocation of
// n_ctx = context cells (llama_kv_cache_init), so a row carries:
//   kv_bytes_per_token = one cell over every layer, K and V (ggml row sizes),
//   kv_bytes_at_context = the cache at n_ctx = context (llama-2-7b, 1024,
//     f16: 512 MiB),
//   capacity_tokens = the cells the budget left after weights and
//     activations could hold, max_concurrent_seqs = those / context (a
//     unified cache shares its cells between the sequences of a context),
//   block_bytes and num_blocks 0 (no blocks), fits = the cache at n_ctx
//     fits the budget.
#include "cli/studies/capacity_plan.hpp"
#include "sim/cache/pool_sizing.hpp"

namespace kvsim {

// Throws std::invalid_argument for a name that is not a ggml type or a row
// of the model that is not whole blocks of it.
void fill_llama_cells_capacity_row(CapacityRow& row, const ModelSpec& model,
                                   const PoolSizing& pool);

}  // namespace kvsim
