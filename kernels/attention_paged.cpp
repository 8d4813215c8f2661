// Paged attention over a KvPool: varlen prefill (blockwise online softmax
// with Eigen GEMMs). Decode is in attention_decode.cpp.
#include <Eigen/Core>
#include <algorithm>
#include <cmath>
#include <limits>
#include <stdexcept>
#include <vector>

#include "kernels/attention.hpp"

namespace kvsim::kernels {
namespace {

using RowMat = Eigen::Matrix<float, Eigen::Dynamic, Eigen::Dynamic, Eigen::RowMajor>;

void check_paged_heads(const KvPool& pool, int64_t q_heads) {
  if (q_heads <= 0 || q_heads % pool.kv_heads() != 0)
    throw std::invalid_argument("attention: q_heads must be a positive multiple of kv_heads");
}

// How a block table's entry names K and V rows: a Ksana block id read at
// one layer, or an ATB kcache/vcache id, whose layer is in the id (seed 000).
struct KsanaRows {
  const KvPool& pool;
  int64_t layer;
  void read(int32_t block, KvPart part, int64_t token, int64_t head, float* dst) const {
    pool.read_row(block, part, layer, token, head, dst);
  }
};
struct AtbRows {
  const KvPool& pool;
  void read(int32_t atb_block, KvPart part, int64_t token, int64_t head, float* dst) const {
    pool.atb_read_row(part, atb_block, token, head, dst);
  }
};

// Loads rows [0, n) of one block's K or V for a head into m (n x d).
template <class Rows>
void load_block(const Rows& kv_rows, int64_t d, int32_t block, KvPart part, int64_t head, int64_t n,
                RowMat& m) {
  m.resize(n, d);
  for (int64_t t = 0; t < n; ++t) kv_rows.read(block, part, t, head, m.row(t).data());
}

// One sequence, one KV head: queries [q_len, group] rows, FlashAttention over blocks.
template <class Rows>
void varlen_one(const KvPool& pool, const Rows& kv_rows, const float* q, int64_t q_len,
                int64_t k_len, std::span<const int32_t> table, int64_t q_heads, int64_t kh,
                float scale, float* out) {
  const int64_t d = pool.head_dim();
  const int64_t group = q_heads / pool.kv_heads();
  const int64_t bt = pool.block_tokens();
  constexpr int64_t kTile = 64;  // queries per tile
  RowMat qt, s, acc, kb, vb;
  for (int64_t q0 = 0; q0 < q_len; q0 += kTile) {
    const int64_t tq = std::min(kTile, q_len - q0);
    const int64_t rows = tq * group;
    qt.resize(rows, d);
    for (int64_t i = 0; i < tq; ++i)
      for (int64_t j = 0; j < group; ++j)
        qt.row(i * group + j) =
            Eigen::Map<const Eigen::RowVectorXf>(q + ((q0 + i) * q_heads + kh * group + j) * d, d) *
            scale;
    acc.setZero(rows, d);
    Eigen::VectorXf m = Eigen::VectorXf::Constant(rows, -std::numeric_limits<float>::infinity());
    Eigen::VectorXf l = Eigen::VectorXf::Zero(rows);
    const int64_t last_visible = k_len - q_len + q0 + tq - 1;  // of the tile's last query
    for (int64_t b0 = 0; b0 <= last_visible; b0 += bt) {
      const int64_t n = std::min(bt, k_len - b0);
      const int32_t block = table[static_cast<size_t>(b0 / bt)];
      load_block(kv_rows, d, block, KvPart::key, kh, n, kb);
      load_block(kv_rows, d, block, KvPart::value, kh, n, vb);
      s.noalias() = qt * kb.transpose();
      for (int64_t r = 0; r < rows; ++r) {
        const int64_t visible = k_len - q_len + q0 + r / group;  // last key this query sees
        float mx = m(r);
        for (int64_t t = 0; t < n; ++t) {
          if (b0 + t > visible) s(r, t) = -std::numeric_limits<float>::infinity();
          mx = std::max(mx, s(r, t));
        }
        if (mx == -std::numeric_limits<float>::infinity()) continue;
        const float corr = std::exp(m(r) - mx);
        s.row(r) = (s.row(r).array() - mx).exp();
        l(r) = l(r) * corr + s.row(r).sum();
        acc.row(r) *= corr;
        m(r) = mx;
      }
      acc.noalias() += s * vb;
    }
    for (int64_t r = 0; r < rows; ++r) {
      const int64_t i = r / group, j = r % group;
      Eigen::Map<Eigen::RowVectorXf>(out + ((q0 + i) * q_heads + kh * group + j) * d, d) =
          acc.row(r) / l(r);
    }
  }
}

// Both addressings run the same arithmetic in the same order: only where
// a row is read from differs.
template <class Rows>
void varlen_all(const KvPool& pool, const Rows& rows, const float* q,
                std::span<const int32_t> cu_seqlens_q, std::span<const int32_t> seqlens_k,
                std::span<const std::span<const int32_t>> block_tables, int64_t q_heads,
                float scale, float* out) {
  check_paged_heads(pool, q_heads);
  const int64_t d = pool.head_dim();
  for (size_t s = 0; s + 1 < cu_seqlens_q.size(); ++s) {
    const int64_t q0 = cu_seqlens_q[s], q_len = cu_seqlens_q[s + 1] - q0;
    const int64_t k_len = seqlens_k[s];
    if (q_len <= 0) continue;
    if (k_len < q_len) throw std::invalid_argument("attention: fewer keys than queries");
    if (static_cast<int64_t>(block_tables[s].size()) * pool.block_tokens() < k_len)
      throw std::invalid_argument("attention: block table shorter than the context");
    for (int64_t kh = 0; kh < pool.kv_heads(); ++kh)
      varlen_one(pool, rows, q + q0 * q_heads * d, q_len, k_len, block_tables[s], q_heads, kh,
                 scale, out + q0 * q_heads * d);
  }
}

}  // namespace

void paged_varlen_attention(const KvPool& pool, int64_t layer, const float* q,
                            std::span<const int32_t> cu_seqlens_q,
                            std::span<const int32_t> seqlens_k,
                            std::span<const std::span<const int32_t>> block_tables, int64_t q_heads,
                            float scale, float* out) {
  varlen_all(pool, KsanaRows{pool, layer}, q, cu_seqlens_q, seqlens_k, block_tables, q_heads, scale,
             out);
}

void paged_varlen_attention_atb(const KvPool& pool, const float* q,
                                std::span<const int32_t> cu_seqlens_q,
                                std::span<const int32_t> seqlens_k,
                                std::span<const std::span<const int32_t>> atb_block_tables,
                                int64_t q_heads, float scale, float* out) {
  varlen_all(pool, AtbRows{pool}, q, cu_seqlens_q, seqlens_k, atb_block_tables, q_heads, scale,
             out);
}

}  // namespace kvsim::kernels
