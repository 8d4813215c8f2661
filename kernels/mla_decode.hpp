#pragma once
// Multi-head latent attention decode (DeepSeek-V2/V3), in the
// weight-absorbed form serving engines run over a latent cache (FlashMLA,
// vLLM's MLA backend): the cache holds per token one latent c (kv_lora_rank)
// and one shared, already rotated RoPE key k_r (qk_rope_head_dim); the
// per-head keys and values are never materialised. For head h:
//   q_lat[h]  = W_UK[h]^T q_nope[h]                       (kv_lora_rank)
//   s[h, t]   = scale * (q_lat[h] . c[t] + q_rope[h] . k_r[t])
//   o_lat[h]  = sum_t softmax_t(s[h, .]) c[t]             (kv_lora_rank)
//   out[h]    = W_UV[h] o_lat[h]                          (v_head_dim)
// which equals attention over the decompressed k[h, t] = (W_UK[h] c[t], k_r[t])
// and v[h, t] = W_UV[h] c[t] (the reference below).
#include <cstdint>
#include <vector>

#include "kernels/kv_pool.hpp"

namespace kvsim::kernels {

struct MlaDims {
  int64_t heads = 0;
  int64_t kv_lora_rank = 0;
  int64_t qk_nope_head_dim = 0;
  int64_t qk_rope_head_dim = 0;
  int64_t v_head_dim = 0;
};

// Row-major inputs for one query token over `tokens` cached tokens:
//   q_nope [heads, nope], q_rope [heads, rope],
//   latent [tokens, kv_lora_rank], k_rope [tokens, rope],
//   w_uk [heads, nope, kv_lora_rank], w_uv [heads, v_head_dim, kv_lora_rank];
// out [heads, v_head_dim]. Online softmax in float, one pass over the cache.
void mla_decode_absorbed(const MlaDims& d, const float* q_nope, const float* q_rope,
                         const float* latent, const float* k_rope, int64_t tokens,
                         const float* w_uk, const float* w_uv, float scale, float* out);

// The independent reference: decompress K and V per head, then naive
// attention in double.
void mla_decode_reference(const MlaDims& d, const float* q_nope, const float* q_rope,
                          const float* latent, const float* k_rope, int64_t tokens,
                          const float* w_uk, const float* w_uv, float scale, float* out);

// The paged latent cache: a KvPool of one "head" per token and layer whose
// row is the latent followed by the RoPE key (head_dim = kv_lora_rank +
// qk_rope_head_dim), in the K half of each block (a latent cache has no V:
// the V half stays unused in this pool). Token t of a sequence sits in block
// block_table[t / block_tokens] at row t % block_tokens (vLLM's block
// tables). Reads `tokens` rows (decoded from the pool's dtype) into
// latent [tokens, kv_lora_rank] and k_rope [tokens, rope].
void gather_latent_rows(const KvPool& pool, int64_t layer, const std::vector<int32_t>& block_table,
                        int64_t tokens, int64_t kv_lora_rank, float* latent, float* k_rope);

// mla_decode_absorbed over the paged latent cache: the rows are read through
// the block table block by block (each decoded once, not once per head),
// then attended in the weight-absorbed form.
void mla_decode_absorbed_paged(const MlaDims& d, const float* q_nope, const float* q_rope,
                               const KvPool& pool, int64_t layer,
                               const std::vector<int32_t>& block_table, int64_t tokens,
                               const float* w_uk, const float* w_uv, float scale, float* out);

}  // namespace kvsim::kernels
