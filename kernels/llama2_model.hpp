#pragma once
// A llama2.c legacy `.bin` checkpoint (shared/data/models/stories260K) and
// its transformer forward pass: RMSNorm, attention through a paged KV pool,
// SwiGLU. Every K/V the pass uses is written to the pool by slot mapping
// (store_kvcache) and read back through the sequence's block table (paged
// attention): nothing is kept on the side, so a wrong block table makes
// wrong text. The pass itself (llama2_forward_with) takes the attention as a
// step of its own, so Genie's buffers (cli/generate/llama2_genie.cpp) run the
// same arithmetic with their own KV reads and writes.
#include <Eigen/Core>
#include <cstdint>
#include <functional>
#include <span>
#include <string>
#include <vector>

#include "kernels/kv_pool.hpp"
#include "kernels/rope.hpp"

namespace kvsim::kernels {

struct Llama2Config {
  int32_t dim = 0, hidden_dim = 0, n_layers = 0, n_heads = 0, n_kv_heads = 0, vocab_size = 0,
          seq_len = 0;
  bool shared_classifier = true;  // positive vocab_size in the header
  int32_t head_size() const { return dim / n_heads; }
  int32_t kv_dim() const { return n_kv_heads * head_size(); }
};

using WeightMatrix = Eigen::Matrix<float, Eigen::Dynamic, Eigen::Dynamic, Eigen::RowMajor>;

struct Llama2Weights {
  Llama2Config config;
  WeightMatrix token_embedding;  // [vocab, dim]
  std::vector<Eigen::VectorXf> rms_att, rms_ffn;
  std::vector<WeightMatrix> wq, wk, wv, wo, w1, w2, w3;  // (out, in)
  Eigen::VectorXf rms_final;
  WeightMatrix classifier;  // empty when shared with the embedding
  // llama2.c conventions for this format (shared/data/README.md).
  float rope_theta = 10000.0f;
  RopeStyle rope_style = RopeStyle::adjacent_pairs;
  float norm_eps = 1e-5f;
};

// Throws std::runtime_error naming the file and what is wrong.
Llama2Weights load_llama2_checkpoint(const std::string& path);

// Runs tokens[0..n) at positions pos0.. of a sequence whose KV lives in
// `pool` under `block_table`; returns the logits of the last token.
// `rope_offset` rotates q and k as if the sequence started that many
// positions later while its cache rows stay at pos0.. (seed 003: a chunk
// computed alone at a virtual position, in blocks of its own).
std::vector<float> llama2_forward(const Llama2Weights& w, KvPool& pool,
                                  std::span<const int32_t> block_table, const int32_t* tokens,
                                  int64_t n, int64_t pos0, int64_t rope_offset = 0);

// One layer's attention for the pass's n rows: q [n, dim], k and v
// [n, kv_dim] after RoPE in, att [n, dim] out. Where the K/V are written
// and read back from (a paged pool, Genie's buffers) is the caller's.
using Llama2Attention =
    std::function<void(int64_t layer, const WeightMatrix& q, const WeightMatrix& k,
                       const WeightMatrix& v, WeightMatrix& att)>;

// The pass's steps, for passes that change which rows go on between layers
// (kernels/llama2_selective_recompute.hpp): the rows' embeddings; a layer's
// RMSNorm, QKV and RoPE at `positions` (one per row of x) into `st`; after
// the attention has filled st.att, the output projection and SwiGLU into x;
// the last row's logits.
struct Llama2LayerState {
  WeightMatrix xb, q, k, v, att, h1, h3;
};
WeightMatrix llama2_embed(const Llama2Weights& w, const int32_t* tokens, int64_t n,
                          const char* caller);
void llama2_qkv(const Llama2Weights& w, int64_t layer, const WeightMatrix& x,
                std::span<const int64_t> positions, Llama2LayerState& st);
void llama2_layer_rest(const Llama2Weights& w, int64_t layer, WeightMatrix& x,
                       Llama2LayerState& st);
std::vector<float> llama2_logits(const Llama2Weights& w, const WeightMatrix& x);

// The forward pass shared by every KV store: embedding, then per layer
// RMSNorm, QKV, RoPE at rope_offset + pos0.., `attend`, output projection and
// SwiGLU; returns the last token's logits. `caller` names the entry point in
// the error for a token outside the vocabulary (std::out_of_range).
std::vector<float> llama2_forward_with(const Llama2Weights& w, const int32_t* tokens, int64_t n,
                                       int64_t pos0, int64_t rope_offset,
                                       const Llama2Attention& attend, const char* caller);

}  // namespace kvsim::kernels
