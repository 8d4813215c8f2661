#include "kernels/llama2_model.hpp"

#include <fmt/format.h>

#include <cmath>
#include <cstdint>
#include <filesystem>
#include <fstream>
#include <stdexcept>

#include "kernels/attention.hpp"
#include "kernels/store_kvcache.hpp"

namespace kvsim::kernels {
namespace {

class Reader {
 public:
  explicit Reader(const std::string& path) : path_(path), in_(path, std::ios::binary) {
    if (!in_) throw std::runtime_error(fmt::format("{}: cannot open the checkpoint", path));
  }
  void read(void* dst, size_t bytes) {
    in_.read(static_cast<char*>(dst), static_cast<std::streamsize>(bytes));
    if (!in_) throw std::runtime_error(fmt::format("{}: truncated checkpoint", path_));
  }
  WeightMatrix matrix(int64_t rows, int64_t cols) {
    WeightMatrix m(rows, cols);
    read(m.data(), static_cast<size_t>(rows * cols) * sizeof(float));
    return m;
  }
  Eigen::VectorXf vector(int64_t n) {
    Eigen::VectorXf v(n);
    read(v.data(), static_cast<size_t>(n) * sizeof(float));
    return v;
  }

 private:
  std::string path_;
  std::ifstream in_;
};

void rmsnorm(const WeightMatrix& x, const Eigen::VectorXf& weight, float eps, WeightMatrix& out) {
  out.resize(x.rows(), x.cols());
  for (int64_t i = 0; i < x.rows(); ++i) {
    const float ss = 1.0f / std::sqrt(x.row(i).squaredNorm() / static_cast<float>(x.cols()) + eps);
    out.row(i) = x.row(i).cwiseProduct(weight.transpose()) * ss;
  }
}

// Every tensor's size follows from the header, so the file must hold them
// all: checked before anything is allocated, since a damaged header could
// otherwise ask for terabytes (llama2.c's layout: embeddings, per-layer
// norms and weights, final norm, two RoPE tables, an optional classifier).
void check_checkpoint_size(const std::string& path, const Llama2Config& c) {
  const double dim = c.dim, hidden = c.hidden_dim, layers = c.n_layers, vocab = c.vocab_size;
  const double kv_dim = static_cast<double>(c.n_kv_heads) * (dim / c.n_heads);
  const double per_layer = 2 * dim + 2 * dim * dim + 2 * kv_dim * dim + 3 * hidden * dim;
  const double floats = vocab * dim + layers * per_layer + dim +
                        static_cast<double>(c.seq_len) * (dim / c.n_heads) +
                        (c.shared_classifier ? 0.0 : vocab * dim);
  const double needed = 7 * sizeof(int32_t) + floats * sizeof(float);
  std::error_code ec;
  const auto size = std::filesystem::file_size(path, ec);
  if (ec) throw std::runtime_error(fmt::format("{}: {}", path, ec.message()));
  if (needed > static_cast<double>(size))
    throw std::runtime_error(fmt::format(
        "{}: truncated checkpoint: its header (dim {}, hidden_dim {}, {} layers, vocab {}, "
        "seq_len {}) needs {:.0f} bytes, the file has {}",
        path, c.dim, c.hidden_dim, c.n_layers, c.vocab_size, c.seq_len, needed, size));
}

}  // namespace

Llama2Weights load_llama2_checkpoint(const std::string& path) {
  Reader r(path);
  Llama2Weights w;
  Llama2Config& c = w.config;
  int32_t header[7];
  r.read(header, sizeof(header));
  c.dim = header[0];
  c.hidden_dim = header[1];
  c.n_layers = header[2];
  c.n_heads = header[3];
  c.n_kv_heads = header[4];
  c.vocab_size = header[5];
  c.seq_len = header[6];
  c.shared_classifier = c.vocab_size > 0;
  // -INT32_MIN does not exist: that header is as bad as a vocabulary of 0.
  if (c.vocab_size < 0) c.vocab_size = c.vocab_size == INT32_MIN ? 0 : -c.vocab_size;
  if (c.dim <= 0 || c.hidden_dim <= 0 || c.n_layers <= 0 || c.n_heads <= 0 || c.n_kv_heads <= 0 ||
      c.vocab_size <= 0 || c.seq_len <= 0 || c.dim % c.n_heads != 0 ||
      c.n_heads % c.n_kv_heads != 0 || c.dim > 65536 || c.n_layers > 1024)
    throw std::runtime_error(fmt::format("{}: not a llama2.c checkpoint (bad header)", path));
  check_checkpoint_size(path, c);
  const int64_t L = c.n_layers;
  w.token_embedding = r.matrix(c.vocab_size, c.dim);
  for (int64_t l = 0; l < L; ++l) w.rms_att.push_back(r.vector(c.dim));
  for (int64_t l = 0; l < L; ++l) w.wq.push_back(r.matrix(c.dim, c.dim));
  for (int64_t l = 0; l < L; ++l) w.wk.push_back(r.matrix(c.kv_dim(), c.dim));
  for (int64_t l = 0; l < L; ++l) w.wv.push_back(r.matrix(c.kv_dim(), c.dim));
  for (int64_t l = 0; l < L; ++l) w.wo.push_back(r.matrix(c.dim, c.dim));
  for (int64_t l = 0; l < L; ++l) w.rms_ffn.push_back(r.vector(c.dim));
  for (int64_t l = 0; l < L; ++l) w.w1.push_back(r.matrix(c.hidden_dim, c.dim));
  for (int64_t l = 0; l < L; ++l) w.w2.push_back(r.matrix(c.dim, c.hidden_dim));
  for (int64_t l = 0; l < L; ++l) w.w3.push_back(r.matrix(c.hidden_dim, c.dim));
  w.rms_final = r.vector(c.dim);
  // Two legacy RoPE tables [seq_len, head_size / 2] follow; we compute RoPE instead.
  std::vector<float> skip(static_cast<size_t>(c.seq_len) * static_cast<size_t>(c.head_size()));
  r.read(skip.data(), skip.size() * sizeof(float));
  if (!c.shared_classifier) w.classifier = r.matrix(c.vocab_size, c.dim);
  return w;
}

WeightMatrix llama2_embed(const Llama2Weights& w, const int32_t* tokens, int64_t n,
                          const char* caller) {
  const Llama2Config& c = w.config;
  WeightMatrix x(n, c.dim);
  for (int64_t i = 0; i < n; ++i) {
    if (tokens[i] < 0 || tokens[i] >= c.vocab_size)
      throw std::out_of_range(fmt::format("{}: token id outside the vocabulary", caller));
    x.row(i) = w.token_embedding.row(tokens[i]);
  }
  return x;
}

void llama2_qkv(const Llama2Weights& w, int64_t layer, const WeightMatrix& x,
                std::span<const int64_t> positions, Llama2LayerState& st) {
  const Llama2Config& c = w.config;
  const auto li = static_cast<size_t>(layer);
  const int64_t hs = c.head_size();
  rmsnorm(x, w.rms_att[li], w.norm_eps, st.xb);
  st.q.noalias() = st.xb * w.wq[li].transpose();
  st.k.noalias() = st.xb * w.wk[li].transpose();
  st.v.noalias() = st.xb * w.wv[li].transpose();
  for (int64_t i = 0; i < x.rows(); ++i) {
    const int64_t pos = positions[static_cast<size_t>(i)];
    apply_rope(st.q.row(i).data(), c.n_heads, hs, pos, w.rope_theta, w.rope_style);
    apply_rope(st.k.row(i).data(), c.n_kv_heads, hs, pos, w.rope_theta, w.rope_style);
  }
}

void llama2_layer_rest(const Llama2Weights& w, int64_t layer, WeightMatrix& x,
                       Llama2LayerState& st) {
  const auto li = static_cast<size_t>(layer);
  x.noalias() += st.att * w.wo[li].transpose();
  rmsnorm(x, w.rms_ffn[li], w.norm_eps, st.xb);
  st.h1.noalias() = st.xb * w.w1[li].transpose();
  st.h3.noalias() = st.xb * w.w3[li].transpose();
  // SwiGLU: silu(w1 x) * (w3 x).
  st.h1 = (st.h1.array() / (1.0f + (-st.h1.array()).exp())) * st.h3.array();
  x.noalias() += st.h1 * w.w2[li].transpose();
}

std::vector<float> llama2_logits(const Llama2Weights& w, const WeightMatrix& x) {
  WeightMatrix last = x.bottomRows(1), xb;
  rmsnorm(last, w.rms_final, w.norm_eps, xb);
  const WeightMatrix& cls = w.config.shared_classifier ? w.token_embedding : w.classifier;
  Eigen::RowVectorXf logits = xb.row(0) * cls.transpose();
  return std::vector<float>(logits.data(), logits.data() + logits.size());
}

std::vector<float> llama2_forward_with(const Llama2Weights& w, const int32_t* tokens, int64_t n,
                                       int64_t pos0, int64_t rope_offset,
                                       const Llama2Attention& attend, const char* caller) {
  WeightMatrix x = llama2_embed(w, tokens, n, caller);
  std::vector<int64_t> positions(static_cast<size_t>(n));
  for (int64_t i = 0; i < n; ++i) positions[static_cast<size_t>(i)] = rope_offset + pos0 + i;
  Llama2LayerState st;
  st.att.resize(n, w.config.dim);
  for (int64_t l = 0; l < w.config.n_layers; ++l) {
    llama2_qkv(w, l, x, positions, st);
    attend(l, st.q, st.k, st.v, st.att);
    llama2_layer_rest(w, l, x, st);
  }
  return llama2_logits(w, x);
}

std::vector<float> llama2_forward(const Llama2Weights& w, KvPool& pool,
                                  std::span<const int32_t> block_table, const int32_t* tokens,
                                  int64_t n, int64_t pos0, int64_t rope_offset) {
  const Llama2Config& c = w.config;
  const float scale = 1.0f / std::sqrt(static_cast<float>(c.head_size()));
  const std::span<const int32_t> tables[1] = {block_table};
  const std::vector<int64_t> slots = slot_mapping_for(block_table, pool.block_tokens(), pos0, n);
  const auto paged_attention = [&](int64_t l, const WeightMatrix& q, const WeightMatrix& k,
                                   const WeightMatrix& v, WeightMatrix& att) {
    // K is cached after RoPE (llama2.c), then everything is read back from the pool.
    store_kvcache(pool, l, k.data(), v.data(), slots);
    if (n == 1) {
      const int32_t seqlen[1] = {static_cast<int32_t>(pos0 + 1)};
      paged_decode_attention(pool, l, q.data(), seqlen, tables, c.n_heads, scale, att.data());
    } else {
      const int32_t cu[2] = {0, static_cast<int32_t>(n)};
      const int32_t seqlen[1] = {static_cast<int32_t>(pos0 + n)};
      paged_varlen_attention(pool, l, q.data(), cu, seqlen, tables, c.n_heads, scale, att.data());
    }
  };
  return llama2_forward_with(w, tokens, n, pos0, rope_offset, paged_attention, "llama2_forward");
}

}  // namespace kvsim::kernels
