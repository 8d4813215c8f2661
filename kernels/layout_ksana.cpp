// Ksana block pool layout (seed 000, "Compatibility and Conversion Method" 1).
#include "kernels/kv_layout.hpp"

namespace kvsim {

int64_t ksana_block_base(const BlockGeometry& g, int64_t block) {
  // cache_base_ptr + block * 2 * layer_num * block_token_num * head_num * head_dim * sizeof(DTYPE)
  return block * g.block_bytes();
}

namespace {
class KsanaLayout final : public KvLayout {
 public:
  std::string_view name() const override { return "ksana"; }
  std::optional<LayoutRejection> reject(const BlockGeometry&) const override {
    return std::nullopt;
  }
  int64_t host_table_entries(const BlockGeometry&, int64_t) const override { return 0; }
  int64_t byte_offset(const BlockGeometry& g, const KvCoordinate& c) const override {
    // Block shape [2, layers, block_tokens, heads, head_dim], row-major.
    const int64_t part = static_cast<int64_t>(c.part);
    const int64_t slab = (part * g.layers + c.layer) * g.slab_bytes();
    const int64_t inner = ((c.token * g.kv_heads + c.head) * g.head_dim + c.dim) * g.dtype_bytes;
    return ksana_block_base(g, c.block) + slab + inner;
  }
};
}  // namespace

std::unique_ptr<KvLayout> make_ksana_layout() {
  return std::make_unique<KsanaLayout>();
}

}  // namespace kvsim
