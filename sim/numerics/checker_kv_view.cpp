#include "sim/numerics/checker_kv_view.hpp"

#include <stdexcept>
#include <string>

#include "kernels/attention.hpp"
#include "kernels/kv_layout.hpp"
#include "kernels/store_kvcache.hpp"

namespace kvsim::numerics {
namespace {

// One sequence's queries [0, nq) over k_len keys.
struct OneSequence {
  int32_t cu[2];
  int32_t seqlen[1];
  OneSequence(int64_t nq, int64_t k_len)
      : cu{0, static_cast<int32_t>(nq)}, seqlen{static_cast<int32_t>(k_len)} {}
};

}  // namespace

void KsanaCheckerView::store(kernels::KvPool& pool, int64_t layer, std::span<const int32_t> table,
                             int64_t first, int64_t n, const float* k, const float* v) {
  const std::vector<int64_t> slots =
      kernels::slot_mapping_for(table, pool.block_tokens(), first, n);
  kernels::store_kvcache(pool, layer, k, v, slots);
}

void KsanaCheckerView::attend(const kernels::KvPool& pool, int64_t layer,
                              std::span<const int32_t> table, const float* q, int64_t nq,
                              int64_t k_len, int64_t q_heads, float scale, float* out) {
  const OneSequence one(nq, k_len);
  const std::span<const int32_t> tables[1] = {table};
  kernels::paged_varlen_attention(pool, layer, q, one.cu, one.seqlen, tables, q_heads, scale, out);
}

void AtbCheckerView::convert(const BlockGeometry& g, std::span<const int32_t> ksana, int64_t layer,
                             Use, std::vector<int32_t>& atb) const {
  atb_block_table(g, ksana, layer, atb);
}

const std::vector<int32_t>& AtbCheckerView::layer_table(const BlockGeometry& g,
                                                        std::span<const int32_t> ksana,
                                                        int64_t layer, Use use) {
  convert(g, ksana, layer, use, atb_table_);
  ++tables_built_;
  table_entries_ += ksana.size();
  return atb_table_;
}

void AtbCheckerView::store(kernels::KvPool& pool, int64_t layer, std::span<const int32_t> table,
                           int64_t first, int64_t n, const float* k, const float* v) {
  // The slots of ATB's ReshapeAndCache are kcache/vcache slots: this
  // layer's ATB ids times block_tokens plus the offset.
  const std::vector<int32_t>& atb = layer_table(pool.geometry(), table, layer, Use::store);
  const std::vector<int64_t> slots = kernels::slot_mapping_for(atb, pool.block_tokens(), first, n);
  kernels::store_kvcache_atb(pool, k, v, slots);
}

void AtbCheckerView::attend(const kernels::KvPool& pool, int64_t layer,
                            std::span<const int32_t> table, const float* q, int64_t nq,
                            int64_t k_len, int64_t q_heads, float scale, float* out) {
  const std::vector<int32_t>& atb = layer_table(pool.geometry(), table, layer, Use::attend);
  const OneSequence one(nq, k_len);
  const std::span<const int32_t> tables[1] = {atb};
  kernels::paged_varlen_attention_atb(pool, q, one.cu, one.seqlen, tables, q_heads, scale, out);
}

std::unique_ptr<CheckerKvView> make_checker_kv_view(std::string_view layout) {
  if (layout == "ksana") return std::make_unique<KsanaCheckerView>();
  if (layout == "atb") return std::make_unique<AtbCheckerView>();
  throw std::invalid_argument("numerics checker: no view of layout " + std::string(layout));
}

}  // namespace kvsim::numerics
