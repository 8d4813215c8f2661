#pragma once
// Attention kernels (SPEC 8), fp32 compute on the pool's storage type.
// Tensors are row-major float arrays: queries and outputs [tokens, q_heads,
// head_dim], dense keys and values [tokens, kv_heads, head_dim]. Grouped-query
// heads: query head h reads KV head h / (q_heads / kv_heads) (llama2.c, HF).
// Causality is bottom-right aligned as in flash-attn 2.1+ (seed 001): with
// q_len queries over k_len keys, query i sees keys 0 .. k_len - q_len + i.
#include <cstdint>
#include <span>
#include <vector>

#include "kernels/kv_pool.hpp"

namespace kvsim::kernels {

// The independent reference: naive loops in double over dense K/V. When
// `allowed` is given ([nq, nk], nonzero = may attend) it replaces causality.
void dense_attention_reference(const float* q, int64_t nq, const float* k, const float* v,
                               int64_t nk, int64_t q_heads, int64_t kv_heads, int64_t head_dim,
                               float scale, float* out, const uint8_t* allowed = nullptr);

// flash_attn_varlen_func over a paged cache (seed 001): sequence s has
// queries q[cu_seqlens_q[s] .. cu_seqlens_q[s+1]) and seqlens_k[s] keys, all
// read from `pool` at `layer` through block_tables[s] (key position p lives
// in block block_tables[s][p / block_tokens], row p % block_tokens). With a
// prefix-cache hit, seqlens_k exceeds the query count and the cached keys
// come from the cache like the new ones. Online softmax over one block at a
// time (FlashAttention), so memory does not grow with the context.
void paged_varlen_attention(const KvPool& pool, int64_t layer, const float* q,
                            std::span<const int32_t> cu_seqlens_q,
                            std::span<const int32_t> seqlens_k,
                            std::span<const std::span<const int32_t>> block_tables, int64_t q_heads,
                            float scale, float* out);

// paged_varlen_attention through the ATB kcache/vcache view of the same
// pool (seed 000, ATB PagedAttention): atb_block_tables[s] holds one
// layer's ATB ids (b * layers * 2 + layer for Ksana block b,
// atb_block_table in kernels/kv_layout.hpp), so no layer is passed. The
// same arithmetic as paged_varlen_attention: the same bits when the ids
// name the same rows.
void paged_varlen_attention_atb(const KvPool& pool, const float* q,
                                std::span<const int32_t> cu_seqlens_q,
                                std::span<const int32_t> seqlens_k,
                                std::span<const std::span<const int32_t>> atb_block_tables,
                                int64_t q_heads, float scale, float* out);

// flash_attn_with_kvcache for decode (seed 001): one query per sequence over
// cache_seqlens[s] cached keys (the new token's K/V already stored).
void paged_decode_attention(const KvPool& pool, int64_t layer, const float* q,
                            std::span<const int32_t> cache_seqlens,
                            std::span<const std::span<const int32_t>> block_tables, int64_t q_heads,
                            float scale, float* out);

// paged_decode_attention with the softmax's exp by kernels/fast_exp.hpp's
// vectorised polynomial on the fp16 AVX2 path: for callers that compare the
// output with a reference within a tolerance (the numerics checker). The
// paging, the online softmax and the reads are the same code; generation
// keeps paged_decode_attention, byte-exact with llama2.c.
void paged_decode_attention_fast_exp(const KvPool& pool, int64_t layer, const float* q,
                                     std::span<const int32_t> cache_seqlens,
                                     std::span<const std::span<const int32_t>> block_tables,
                                     int64_t q_heads, float scale, float* out);

// paged_decode_attention_fast_exp through its general kernel only (none
// specialised to a shape): what tests compare the specialised ones with,
// bit for bit.
void paged_decode_attention_fast_exp_general(const KvPool& pool, int64_t layer, const float* q,
                                             std::span<const int32_t> cache_seqlens,
                                             std::span<const std::span<const int32_t>> block_tables,
                                             int64_t q_heads, float scale, float* out);

// True when this machine runs the fp16 decode path with AVX2/F16C.
bool fast_fp16_decode_available();

}  // namespace kvsim::kernels
