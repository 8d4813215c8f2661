#include "kernels/mla_decode.hpp"

#include <algorithm>
#include <cmath>
#include <limits>
#include <stdexcept>
#include <vector>

namespace kvsim::kernels {

namespace {

void check(const MlaDims& d, int64_t tokens) {
  if (d.heads < 1 || d.kv_lora_rank < 1 || d.qk_nope_head_dim < 1 || d.qk_rope_head_dim < 0 ||
      d.v_head_dim < 1 || tokens < 1)
    throw std::invalid_argument("mla_decode: dimensions and tokens must be positive");
}

}  // namespace

void mla_decode_absorbed(const MlaDims& d, const float* q_nope, const float* q_rope,
                         const float* latent, const float* k_rope, int64_t tokens,
                         const float* w_uk, const float* w_uv, float scale, float* out) {
  check(d, tokens);
  const int64_t r = d.kv_lora_rank, nope = d.qk_nope_head_dim, rope = d.qk_rope_head_dim;
  std::vector<float> q_lat(static_cast<size_t>(r));
  std::vector<float> o_lat(static_cast<size_t>(r));
  for (int64_t h = 0; h < d.heads; ++h) {
    // Absorb W_UK into the query: q_lat = W_UK[h]^T q_nope[h].
    std::fill(q_lat.begin(), q_lat.end(), 0.0f);
    const float* wk = w_uk + h * nope * r;
    for (int64_t i = 0; i < nope; ++i) {
      const float qi = q_nope[h * nope + i];
      for (int64_t c = 0; c < r; ++c) q_lat[static_cast<size_t>(c)] += qi * wk[i * r + c];
    }
    // One pass over the latent cache with a running max (online softmax).
    float running_max = -std::numeric_limits<float>::infinity();
    float denom = 0.0f;
    std::fill(o_lat.begin(), o_lat.end(), 0.0f);
    for (int64_t t = 0; t < tokens; ++t) {
      const float* ct = latent + t * r;
      float s = 0.0f;
      for (int64_t c = 0; c < r; ++c) s += q_lat[static_cast<size_t>(c)] * ct[c];
      for (int64_t c = 0; c < rope; ++c) s += q_rope[h * rope + c] * k_rope[t * rope + c];
      s *= scale;
      const float new_max = std::max(running_max, s);
      const float rescale = std::exp(running_max - new_max);
      const float p = std::exp(s - new_max);
      denom = denom * rescale + p;
      for (int64_t c = 0; c < r; ++c)
        o_lat[static_cast<size_t>(c)] = o_lat[static_cast<size_t>(c)] * rescale + p * ct[c];
      running_max = new_max;
    }
    // Expand through W_UV only once per head, not once per token.
    const float* wv = w_uv + h * d.v_head_dim * r;
    for (int64_t j = 0; j < d.v_head_dim; ++j) {
      float acc = 0.0f;
      for (int64_t c = 0; c < r; ++c) acc += wv[j * r + c] * o_lat[static_cast<size_t>(c)];
      out[h * d.v_head_dim + j] = acc / denom;
    }
  }
}

void mla_decode_reference(const MlaDims& d, const float* q_nope, const float* q_rope,
                          const float* latent, const float* k_rope, int64_t tokens,
                          const float* w_uk, const float* w_uv, float scale, float* out) {
  check(d, tokens);
  const int64_t r = d.kv_lora_rank, nope = d.qk_nope_head_dim, rope = d.qk_rope_head_dim;
  const int64_t vd = d.v_head_dim;
  std::vector<double> k_nope(static_cast<size_t>(tokens * nope));
  std::vector<double> v(static_cast<size_t>(tokens * vd));
  std::vector<double> score(static_cast<size_t>(tokens));
  for (int64_t h = 0; h < d.heads; ++h) {
    // Decompress this head's keys and values from every cached latent.
    for (int64_t t = 0; t < tokens; ++t) {
      for (int64_t i = 0; i < nope; ++i) {
        double acc = 0.0;
        for (int64_t c = 0; c < r; ++c)
          acc += static_cast<double>(w_uk[(h * nope + i) * r + c]) * latent[t * r + c];
        k_nope[static_cast<size_t>(t * nope + i)] = acc;
      }
      for (int64_t j = 0; j < vd; ++j) {
        double acc = 0.0;
        for (int64_t c = 0; c < r; ++c)
          acc += static_cast<double>(w_uv[(h * vd + j) * r + c]) * latent[t * r + c];
        v[static_cast<size_t>(t * vd + j)] = acc;
      }
    }
    double max_score = -std::numeric_limits<double>::infinity();
    for (int64_t t = 0; t < tokens; ++t) {
      double s = 0.0;
      for (int64_t i = 0; i < nope; ++i)
        s += static_cast<double>(q_nope[h * nope + i]) * k_nope[static_cast<size_t>(t * nope + i)];
      for (int64_t c = 0; c < rope; ++c)
        s += static_cast<double>(q_rope[h * rope + c]) * k_rope[t * rope + c];
      score[static_cast<size_t>(t)] = s * scale;
      max_score = std::max(max_score, score[static_cast<size_t>(t)]);
    }
    double denom = 0.0;
    for (double& s : score) denom += (s = std::exp(s - max_score));
    for (int64_t j = 0; j < vd; ++j) {
      double acc = 0.0;
      for (int64_t t = 0; t < tokens; ++t)
        acc += score[static_cast<size_t>(t)] * v[static_cast<size_t>(t * vd + j)];
      out[h * vd + j] = static_cast<float>(acc / denom);
    }
  }
}

void gather_latent_rows(const KvPool& pool, int64_t layer, const std::vector<int32_t>& block_table,
                        int64_t tokens, int64_t kv_lora_rank, float* latent, float* k_rope) {
  const int64_t width = pool.head_dim();
  const int64_t rope = width - kv_lora_rank;
  const int64_t bt = pool.block_tokens();
  if (pool.kv_heads() != 1 || rope < 0 || tokens < 0 ||
      static_cast<int64_t>(block_table.size()) * bt < tokens)
    throw std::invalid_argument(
        "gather_latent_rows: the pool must hold one latent + rope row per token, and the block "
        "table cover the tokens");
  std::vector<float> row(static_cast<size_t>(width));
  for (int64_t t = 0; t < tokens; ++t) {
    const int32_t block = block_table[static_cast<size_t>(t / bt)];
    if (block < 0 || block >= pool.num_blocks())
      throw std::invalid_argument("gather_latent_rows: block id outside the pool");
    pool.read_row(block, KvPart::key, layer, t % bt, 0, row.data());
    std::copy(row.begin(), row.begin() + kv_lora_rank, latent + t * kv_lora_rank);
    std::copy(row.begin() + kv_lora_rank, row.end(), k_rope + t * rope);
  }
}

void mla_decode_absorbed_paged(const MlaDims& d, const float* q_nope, const float* q_rope,
                               const KvPool& pool, int64_t layer,
                               const std::vector<int32_t>& block_table, int64_t tokens,
                               const float* w_uk, const float* w_uv, float scale, float* out) {
  check(d, tokens);
  if (pool.head_dim() != d.kv_lora_rank + d.qk_rope_head_dim)
    throw std::invalid_argument("mla_decode_absorbed_paged: pool rows are not latent + rope wide");
  std::vector<float> latent(static_cast<size_t>(tokens * d.kv_lora_rank));
  std::vector<float> k_rope(static_cast<size_t>(tokens * d.qk_rope_head_dim));
  gather_latent_rows(pool, layer, block_table, tokens, d.kv_lora_rank, latent.data(),
                     k_rope.data());
  mla_decode_absorbed(d, q_nope, q_rope, latent.data(), k_rope.data(), tokens, w_uk, w_uv, scale,
                      out);
}

}  // namespace kvsim::kernels
