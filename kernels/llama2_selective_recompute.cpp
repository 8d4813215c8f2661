#include "kernels/llama2_selective_recompute.hpp"

#include <algorithm>
#include <cmath>
#include <numeric>
#include <stdexcept>

#include "kernels/attention.hpp"
#include "kernels/store_kvcache.hpp"

namespace kvsim::kernels {
namespace {

void check_arguments(const KvPool& pool, std::span<const int32_t> table, int64_t n,
                     int64_t first_new, std::span<const RecomputeSegment> segments, double ratio) {
  if (!(ratio >= 0.0 && ratio <= 1.0))
    throw std::invalid_argument("selective recompute: the ratio must lie in [0, 1]");
  if (first_new < 0 || first_new >= n)
    throw std::invalid_argument("selective recompute: the prompt needs at least one new row");
  if (n > static_cast<int64_t>(table.size()) * pool.block_tokens())
    throw std::invalid_argument("selective recompute: the rows run past the block table");
  int64_t end = 0;
  for (const RecomputeSegment& s : segments) {
    if (s.begin < end || s.length < 0 || s.begin + s.length > first_new)
      throw std::invalid_argument(
          "selective recompute: segments must be in order, disjoint and before the new rows");
    end = s.begin + s.length;
  }
}

// Row i's squared K and V differences from what the pool holds at `layer`.
std::vector<double> kv_deviation(const KvPool& pool, std::span<const int32_t> table, int64_t layer,
                                 const WeightMatrix& k, const WeightMatrix& v) {
  const int64_t bs = pool.block_tokens(), d = pool.head_dim();
  std::vector<double> dev(static_cast<size_t>(k.rows()), 0.0);
  std::vector<float> cached(static_cast<size_t>(d));
  for (int64_t row = 0; row < k.rows(); ++row) {
    const int32_t block = table[static_cast<size_t>(row / bs)];
    double sum = 0;
    for (int64_t h = 0; h < pool.kv_heads(); ++h) {
      for (const auto& [part, m] : {std::pair{KvPart::key, &k}, std::pair{KvPart::value, &v}}) {
        pool.read_row(block, part, layer, row % bs, h, cached.data());
        for (int64_t j = 0; j < d; ++j) {
          const double diff =
              static_cast<double>((*m)(row, h * d + j)) - cached[static_cast<size_t>(j)];
          sum += diff * diff;
        }
      }
    }
    dev[static_cast<size_t>(row)] = sum;
  }
  return dev;
}

WeightMatrix gather_rows(const WeightMatrix& m, const std::vector<int64_t>& index) {
  WeightMatrix out(static_cast<int64_t>(index.size()), m.cols());
  for (size_t i = 0; i < index.size(); ++i) out.row(static_cast<int64_t>(i)) = m.row(index[i]);
  return out;
}

// Stores the rows' K/V in their slots, then attends each run of consecutive
// rows causally over everything before it: one varlen "sequence" per run,
// all through the same block table (one run over every row is exactly
// llama2_forward's call).
void attend_rows(KvPool& pool, int64_t layer, std::span<const int32_t> table,
                 const std::vector<int64_t>& rows, int32_t q_heads, float scale,
                 Llama2LayerState& st) {
  const int64_t bs = pool.block_tokens();
  std::vector<int64_t> slots(rows.size());
  for (size_t i = 0; i < rows.size(); ++i)
    slots[i] = static_cast<int64_t>(table[static_cast<size_t>(rows[i] / bs)]) * bs + rows[i] % bs;
  store_kvcache(pool, layer, st.k.data(), st.v.data(), slots);
  std::vector<int32_t> cu = {0}, seqlen_k;
  for (size_t i = 0; i < rows.size(); ++i) {
    if (i + 1 == rows.size() || rows[i + 1] != rows[i] + 1) {
      cu.push_back(static_cast<int32_t>(i + 1));
      seqlen_k.push_back(static_cast<int32_t>(rows[i] + 1));
    }
  }
  const std::vector<std::span<const int32_t>> tables(seqlen_k.size(), table);
  paged_varlen_attention(pool, layer, st.q.data(), cu, seqlen_k, tables, q_heads, scale,
                         st.att.data());
}

}  // namespace

std::vector<int64_t> high_deviation_rows(std::span<const double> deviation,
                                         std::span<const RecomputeSegment> segments, double ratio) {
  std::vector<int64_t> kept;
  for (const RecomputeSegment& s : segments) {
    const auto k = std::min<int64_t>(
        s.length, static_cast<int64_t>(std::ceil(ratio * static_cast<double>(s.length))));
    std::vector<int64_t> order(static_cast<size_t>(s.length));
    std::iota(order.begin(), order.end(), s.begin);
    std::stable_sort(order.begin(), order.end(), [&](int64_t a, int64_t b) {
      return deviation[static_cast<size_t>(a)] > deviation[static_cast<size_t>(b)];
    });
    order.resize(static_cast<size_t>(k));
    std::sort(order.begin(), order.end());
    kept.insert(kept.end(), order.begin(), order.end());
  }
  return kept;
}

SelectiveRecomputeResult llama2_forward_selective(
    const Llama2Weights& w, KvPool& pool, std::span<const int32_t> table, const int32_t* tokens,
    int64_t n, int64_t first_new, std::span<const RecomputeSegment> segments, double ratio) {
  check_arguments(pool, table, n, first_new, segments, ratio);
  SelectiveRecomputeResult r;
  if (first_new == 0 || ratio == 0.0) {
    // Nothing placed, or nothing to recompute: the new rows over what is there.
    r.logits = llama2_forward(w, pool, table, tokens + first_new, n - first_new, first_new);
    return r;
  }
  const Llama2Config& c = w.config;
  const float scale = 1.0f / std::sqrt(static_cast<float>(c.head_size()));
  WeightMatrix x = llama2_embed(w, tokens, n, "llama2_forward_selective");
  std::vector<int64_t> rows(static_cast<size_t>(n));
  std::iota(rows.begin(), rows.end(), 0);
  Llama2LayerState st;
  for (int64_t l = 0; l < c.n_layers; ++l) {
    llama2_qkv(w, l, x, rows, st);  // a row's position is its row
    if (l == 1) {
      // Every row is still here: pick the ones whose KV deviates most.
      const std::vector<double> dev = kv_deviation(pool, table, l, st.k, st.v);
      std::vector<int64_t> keep = high_deviation_rows(dev, segments, ratio);
      for (int64_t row = first_new; row < n; ++row) keep.push_back(row);
      if (keep.size() < rows.size()) {
        x = gather_rows(x, keep);
        st.q = gather_rows(st.q, keep);
        st.k = gather_rows(st.k, keep);
        st.v = gather_rows(st.v, keep);
        rows = std::move(keep);
      }
    }
    st.att.resize(static_cast<int64_t>(rows.size()), c.dim);
    attend_rows(pool, l, table, rows, c.n_heads, scale, st);
    llama2_layer_rest(w, l, x, st);
  }
  r.logits = llama2_logits(w, x);
  r.recomputed_rows =
      std::count_if(rows.begin(), rows.end(), [&](int64_t row) { return row < first_new; });
  return r;
}

}  // namespace kvsim::kernels
