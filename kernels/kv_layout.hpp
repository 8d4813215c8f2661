#pragma once
// How a paged KV pool is laid out in device memory (seed 000).
//
// ksana: one contiguous pool [num_blocks, 2, layers, block_tokens, kv_heads,
//        head_dim]; block b starts at b * 2 * layers * block_tokens * heads *
//        head_dim * dtype_bytes, its K part first, then its V part.
// atb:   the same bytes seen as Ascend ATB kcache/vcache
//        [num_blocks * layers * 2, block_tokens, heads, head_dim]: kcache at
//        the pool base, vcache at base + layers * block_tokens * heads *
//        head_dim * dtype_bytes, and for layer l the ATB block id of Ksana
//        block b is b * layers * 2 + l (the same id indexes both views).
// Both views address the same byte for the same (block, K/V, layer, token,
// head, dim); tests/test_kv_layout.cpp checks it exhaustively on small shapes.
#include <cstdint>
#include <memory>
#include <optional>
#include <span>
#include <string>
#include <string_view>
#include <vector>

namespace kvsim {

struct BlockGeometry {
  int64_t layers = 0;
  int64_t block_tokens = 0;
  int64_t kv_heads = 0;  // per tensor-parallel rank
  int64_t head_dim = 0;
  int64_t dtype_bytes = 0;

  // Bytes of one (layer, K or V) slab of a block: block_tokens * heads * head_dim * dtype.
  int64_t slab_bytes() const { return block_tokens * kv_heads * head_dim * dtype_bytes; }
  // Bytes of a whole block, K and V of every layer (SPEC 6 block_bytes).
  int64_t block_bytes() const { return 2 * layers * slab_bytes(); }
};

enum class KvPart : int { key = 0, value = 1 };

struct KvCoordinate {
  int64_t block;  // pool block id (Ksana numbering)
  KvPart part;
  int64_t layer;
  int64_t token;  // within the block
  int64_t head;
  int64_t dim;
};

// Why a layout refuses a geometry: which kv_cache key the user changes
// (block_size when another block size would do, layout when none would),
// what is wrong and what is allowed.
struct LayoutRejection {
  std::string key;  // "block_size" or "layout"
  std::string why;
  std::string allowed;
};

class KvLayout {
 public:
  virtual ~KvLayout() = default;
  virtual std::string_view name() const = 0;
  // Why this geometry cannot be used with the layout, or nullopt when it can.
  virtual std::optional<LayoutRejection> reject(const BlockGeometry& g) const = 0;
  // Byte offset of an element from the pool base.
  virtual int64_t byte_offset(const BlockGeometry& g, const KvCoordinate& c) const = 0;
  // Block-table entries the host writes every step for a sequence holding
  // `blocks` blocks, beyond the one table the engine keeps anyway: ksana 0
  // (the kernels take the Ksana ids), atb blocks * layers (a table per
  // layer, seed 000 step 2).
  virtual int64_t host_table_entries(const BlockGeometry& g, int64_t blocks) const = 0;
};

// Seed 000, the Ksana side.
int64_t ksana_block_base(const BlockGeometry& g, int64_t block);
// Seed 000, the ATB side: block id for (Ksana block, layer), and view bases.
int64_t atb_block_id(const BlockGeometry& g, int64_t block, int64_t layer);
int64_t atb_kcache_base(const BlockGeometry& g);
int64_t atb_vcache_base(const BlockGeometry& g);
// Seed 000 step 2, once per layer and step: the ATB block table of one
// layer from a sequence's Ksana block ids, [b0 * layers * 2 + layer, ...]
// into `out` (resized). ATB block tables are int32: throws
// std::overflow_error for an id past INT32_MAX.
void atb_block_table(const BlockGeometry& g, std::span<const int32_t> ksana_blocks, int64_t layer,
                     std::vector<int32_t>& out);
// Offset within a kcache/vcache view of (atb block id, token, head, dim).
int64_t atb_view_offset(const BlockGeometry& g, KvPart part, int64_t atb_block, int64_t token,
                        int64_t head, int64_t dim);

std::unique_ptr<KvLayout> make_ksana_layout();
std::unique_ptr<KvLayout> make_atb_layout();
// Registry by name: the YAML value `kv_cache.layout` picks one.
std::unique_ptr<KvLayout> make_kv_layout(std::string_view name);
std::vector<std::string> kv_layout_names();

}  // namespace kvsim
