// Ascend ATB kcache/vcache view of the Ksana pool (seed 000, conversion step 2).
#include <fmt/format.h>

#include <limits>
#include <stdexcept>

#include "kernels/kv_layout.hpp"

namespace kvsim {

int64_t atb_block_id(const BlockGeometry& g, int64_t block, int64_t layer) {
  // [b0 * layer_num * 2 + layer_idx, ...]
  return block * g.layers * 2 + layer;
}

void atb_block_table(const BlockGeometry& g, std::span<const int32_t> ksana_blocks, int64_t layer,
                     std::vector<int32_t>& out) {
  out.resize(ksana_blocks.size());
  for (size_t i = 0; i < ksana_blocks.size(); ++i) {
    const int64_t id = atb_block_id(g, ksana_blocks[i], layer);
    if (id > std::numeric_limits<int32_t>::max())
      throw std::overflow_error("atb_block_table: an ATB block id exceeds int32");
    out[i] = static_cast<int32_t>(id);
  }
}

int64_t atb_kcache_base(const BlockGeometry&) {
  return 0;
}

int64_t atb_vcache_base(const BlockGeometry& g) {
  // cache_base_ptr + layer_num * block_token_num * head_num * head_dim * sizeof(DTYPE)
  return g.layers * g.slab_bytes();
}

int64_t atb_view_offset(const BlockGeometry& g, KvPart part, int64_t atb_block, int64_t token,
                        int64_t head, int64_t dim) {
  // View shape [num_blocks * layers * 2, block_tokens, heads, head_dim].
  const int64_t base = part == KvPart::key ? atb_kcache_base(g) : atb_vcache_base(g);
  return base + atb_block * g.slab_bytes() +
         ((token * g.kv_heads + head) * g.head_dim + dim) * g.dtype_bytes;
}

namespace {
class AtbLayout final : public KvLayout {
 public:
  std::string_view name() const override { return "atb"; }
  std::optional<LayoutRejection> reject(const BlockGeometry& g) const override {
    // CANN ATB PagedAttentionOperation's constraints (CANN 8.0.RC2 ATB API
    // reference, PagedAttentionOperation): head_size in (0, 256];
    // block_size % 16 == 0; block_size * head_size <= 128 * 128 (a hardware
    // limit; block_size 128 recommended).
    constexpr int64_t kMaxHeadDim = 256, kBlockAlign = 16, kMaxBlockTimesHead = 128 * 128;
    if (g.head_dim <= 0 || g.head_dim > kMaxHeadDim)
      return LayoutRejection{
          "layout",
          fmt::format("ATB paged attention takes head_dim in (0, {}], the model has {}",
                      kMaxHeadDim, g.head_dim),
          fmt::format("layout ksana for this model; atb for a head_dim up to {}", kMaxHeadDim)};
    const int64_t largest = kMaxBlockTimesHead / g.head_dim / kBlockAlign * kBlockAlign;
    const std::string allowed =
        largest >= kBlockAlign
            ? fmt::format(
                  "block_size a multiple of {} up to {} (block_size * head_dim <= {} "
                  "with head_dim {}; 128 recommended), or layout ksana",
                  kBlockAlign, largest, kMaxBlockTimesHead, g.head_dim)
            : "layout ksana";
    if (g.block_tokens % kBlockAlign != 0)
      return LayoutRejection{"block_size",
                             fmt::format("ATB paged attention needs block_size % {} == 0, got {}",
                                         kBlockAlign, g.block_tokens),
                             allowed};
    if (g.block_tokens * g.head_dim > kMaxBlockTimesHead)
      return LayoutRejection{
          "block_size",
          fmt::format("ATB paged attention needs block_size * head_dim <= {}, got {} * {}",
                      kMaxBlockTimesHead, g.block_tokens, g.head_dim),
          allowed};
    return std::nullopt;
  }
  int64_t host_table_entries(const BlockGeometry& g, int64_t blocks) const override {
    return blocks * g.layers;
  }
  int64_t byte_offset(const BlockGeometry& g, const KvCoordinate& c) const override {
    return atb_view_offset(g, c.part, atb_block_id(g, c.block, c.layer), c.token, c.head, c.dim);
  }
};
}  // namespace

std::unique_ptr<KvLayout> make_atb_layout() {
  return std::make_unique<AtbLayout>();
}

std::unique_ptr<KvLayout> make_kv_layout(std::string_view name) {
  if (name == "ksana") return make_ksana_layout();
  if (name == "atb") return make_atb_layout();
  return nullptr;
}

std::vector<std::string> kv_layout_names() {
  return {"atb", "ksana"};
}

}  // namespace kvsim
