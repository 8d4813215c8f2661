#pragma once
// Seed 003's PositionRemapper.remap_and_copy on real buffers: a cached
// chunk's K/V rows are copied from the chunk pool (where they were computed
// at virtual positions) into a sequence's main-pool blocks, and each key is
// re-rotated by (real position - virtual position). V is copied unchanged.
// RoPE rotations compose, so the remapped keys equal keys computed at the
// real position up to the storage type's rounding (tests check fp16).
#include <cstdint>
#include <span>

#include "kernels/kv_pool.hpp"
#include "kernels/rope.hpp"

namespace kvsim::kernels {

struct ChunkRemap {
  std::span<const int32_t> chunk_blocks;      // the chunk's blocks in the chunk pool, in order
  int64_t chunk_first_row = 0;                // row of the chunk's first token in chunk_blocks
  int64_t virtual_position = 0;               // position its first key was rotated at
  std::span<const int32_t> main_block_table;  // the sequence's block table in the main pool
  int64_t real_position = 0;                  // the chunk's first position in the sequence
  int64_t tokens = 0;
  float rope_theta = 10000.0f;
  RopeStyle rope_style = RopeStyle::rotate_half;
};

// Every layer and KV head. Both pools must share layers, heads and head_dim.
// Throws std::invalid_argument on mismatched pools or out-of-range blocks.
void remap_chunk(const KvPool& chunk_pool, KvPool& main_pool, const ChunkRemap& remap);

}  // namespace kvsim::kernels
