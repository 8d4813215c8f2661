// Ascend ATB kcache/vcache view of the Ksana pool (seed 000, conversion step 2).
#include <fmt/format.h>

#include "kernels/kv_layout.hpp"

namespace kvsim {

int64_t atb_block_id(const BlockGeometry& g, int64_t block, int64_t layer) {
  // [b0 * layer_num * 2 + layer_idx, ...]
  return block * g.layers * 2 + layer;
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
  std::optional<std::string> reject(const BlockGeometry& g) const override {
    // CANN ATB PagedAttentionOperation constraints: block_size % 16 == 0, and
    // block_size * head_size <= 128 * 128 (hardware limit; 128 recommended).
    if (g.block_tokens % 16 != 0) {
      return fmt::format("ATB paged attention needs block_size % 16 == 0, got {}", g.block_tokens);
    }
    if (g.block_tokens * g.head_dim > 128 * 128) {
      return fmt::format("ATB paged attention needs block_size * head_dim <= 16384, got {} * {}",
                         g.block_tokens, g.head_dim);
    }
    return std::nullopt;
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
