#include "kernels/chunk_remap.hpp"

#include <stdexcept>
#include <vector>

namespace kvsim::kernels {

void remap_chunk(const KvPool& chunk_pool, KvPool& main_pool, const ChunkRemap& r) {
  if (chunk_pool.layers() != main_pool.layers() || chunk_pool.kv_heads() != main_pool.kv_heads() ||
      chunk_pool.head_dim() != main_pool.head_dim())
    throw std::invalid_argument("remap_chunk: the pools differ in layers, heads or head_dim");
  const int64_t cbt = chunk_pool.block_tokens(), mbt = main_pool.block_tokens();
  const int64_t last_chunk_row = r.chunk_first_row + r.tokens - 1;
  const int64_t last_main = r.real_position + r.tokens - 1;
  if (r.tokens > 0 && (last_chunk_row / cbt >= static_cast<int64_t>(r.chunk_blocks.size()) ||
                       last_main / mbt >= static_cast<int64_t>(r.main_block_table.size())))
    throw std::invalid_argument("remap_chunk: the chunk runs past its blocks or the block table");
  const int64_t delta = r.real_position - r.virtual_position;
  const int64_t heads = chunk_pool.kv_heads(), d = chunk_pool.head_dim();
  std::vector<float> row(static_cast<size_t>(d));
  for (int64_t t = 0; t < r.tokens; ++t) {
    const int64_t src = r.chunk_first_row + t;
    const int64_t src_block = r.chunk_blocks[static_cast<size_t>(src / cbt)];
    const int64_t dst = r.real_position + t;
    const int64_t dst_block = r.main_block_table[static_cast<size_t>(dst / mbt)];
    for (int64_t l = 0; l < chunk_pool.layers(); ++l) {
      for (int64_t h = 0; h < heads; ++h) {
        chunk_pool.read_row(src_block, KvPart::key, l, src % cbt, h, row.data());
        // Key rotated at virtual + t becomes the key rotated at real + t.
        rerotate_rope(row.data(), 1, d, delta, r.rope_theta, r.rope_style);
        main_pool.write_row(dst_block, KvPart::key, l, dst % mbt, h, row.data());
        chunk_pool.read_row(src_block, KvPart::value, l, src % cbt, h, row.data());
        main_pool.write_row(dst_block, KvPart::value, l, dst % mbt, h, row.data());
      }
    }
  }
}

}  // namespace kvsim::kernels
