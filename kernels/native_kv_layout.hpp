#pragma once
// The tiled layout of Genie's NativeKV buffers: the KV tensors the QNN
// compiler lays out itself (QNN_TENSOR_DATA_FORMAT_HMX_WEIGHT_LAYOUT), which
// qualla's CacheGroup detects and hands to its NativeKV manager instead of
// SmartMask (Genie/src/qualla/engines/qnn-htp/KVCache/kvmanager.cpp,
// registerTensors; native-kv.hpp/.cpp: kyungraekim/qnn, examples/Genie/Genie/
// src/qualla/engines/qnn-htp/KVCache/, commit be158f55a350).
//
// A [DIN, DOUT] matrix (per KV head) is cut along DOUT into tiles of
// t = min(DOUT, n_tile) columns; each tile is a run of 32 x 32 blocks of
// 1024 elements (KV_BLOCK_SIZE), blocks ordered by DIN then DOUT, and inside
// a block the elements ordered [din%32 / 4][dout % 32][din % 4]:
//   index = [dout / t][din / 32][(dout % t) / 32][(din % 32) / 4][dout % 32][din % 4]
// The key cache of a head is [head_dim, ctx_size] with n_tile = K_TILE = 256
// (context columns per tile); the value cache is [ctx_size, head_dim] with
// n_tile = V_TILE = 64 (head-dim columns per tile). "These are determined by
// the QNN compiler, and is the size of the tile" (native-kv.hpp), hence
// parameters here with qualla's values as defaults.
//
// The layout needs DIN and DOUT to be multiples of the 32-wide block and a
// tile that divides DOUT (a partial last tile would overlap the next head).
// qualla asserts head_dim % 32 == 0; kvsim pads a head_dim that is not (the
// 8-wide heads of stories260K) up to the block with elements that are never
// read, so real HTP models (head_dim 64 or 128) carry no pad.
#include <algorithm>
#include <cstdint>
#include <string>

namespace kvsim::kernels {

// HMX's block edge: a 32 x 32 block of 1024 elements (KV_BLOCK_SIZE).
inline constexpr int64_t kHmxBlock = 32;

struct NativeKvTiles {
  int64_t k_tile = 256;  // K_TILE: context columns per key tile
  int64_t v_tile = 64;   // V_TILE: head-dim columns per value tile
};

inline int64_t round_up_to_block(int64_t n) {
  return (n + kHmxBlock - 1) / kHmxBlock * kHmxBlock;
}

// The head dim as the layout stores it (padded to the block).
inline int64_t native_kv_head_dim(int64_t head_dim) {
  return round_up_to_block(head_dim);
}

// Context columns the cache holds for an AR-n pass: qualla's
// NativeKV::getCacheBudget (and KVManager::prepareInferenceStrategy's
// cacheBoundary) round the variant up to the block, since the pass's new
// entries start at a block-aligned column (getIndexForNewKV rounds n_valid
// up to 32); the BERT variant (n == ctx_size) holds ctx_size.
inline int64_t native_kv_budget(int64_t ctx_size, int64_t variant) {
  if (variant >= ctx_size) return ctx_size;
  return ctx_size - round_up_to_block(variant);
}

// Element offset of (din, dout) in a [DIN, DOUT] matrix laid out as above.
inline int64_t hmx_offset(int64_t din_size, int64_t dout_size, int64_t n_tile, int64_t din,
                          int64_t dout) {
  const int64_t t = std::min(dout_size, n_tile);
  const int64_t tile = dout / t, in_tile = dout % t;
  // Mixed radix, most significant first.
  int64_t index = tile;
  index = index * (din_size / kHmxBlock) + din / kHmxBlock;
  index = index * (t / kHmxBlock) + in_tile / kHmxBlock;
  index = index * 8 + (din % kHmxBlock) / 4;
  index = index * kHmxBlock + dout % kHmxBlock;
  index = index * 4 + din % 4;
  return index;
}

// What is wrong with this shape for the layout ("" when nothing): which of
// "k_tile", "v_tile" or "ctx_size" is at fault comes first, then why.
inline std::string native_kv_layout_error(int64_t ctx_size, int64_t head_dim,
                                          const NativeKvTiles& tiles, std::string* key = nullptr) {
  const auto fail = [&](const char* k, std::string why) {
    if (key != nullptr) *key = k;
    return why;
  };
  if (ctx_size % kHmxBlock != 0)
    return fail("ctx_size", "ctx_size " + std::to_string(ctx_size) +
                                " is not a multiple of the 32-column HMX block");
  if (tiles.k_tile < kHmxBlock || tiles.k_tile % kHmxBlock != 0)
    return fail("k_tile", "k_tile " + std::to_string(tiles.k_tile) +
                              " is not a whole number of 32-column blocks");
  if (tiles.v_tile < kHmxBlock || tiles.v_tile % kHmxBlock != 0)
    return fail("v_tile", "v_tile " + std::to_string(tiles.v_tile) +
                              " is not a whole number of 32-column blocks");
  const int64_t kt = std::min(ctx_size, tiles.k_tile);
  if (ctx_size % kt != 0)
    return fail("k_tile", "k_tile " + std::to_string(tiles.k_tile) + " does not divide ctx_size " +
                              std::to_string(ctx_size));
  const int64_t d = native_kv_head_dim(head_dim);
  const int64_t vt = std::min(d, tiles.v_tile);
  if (d % vt != 0)
    return fail("v_tile", "v_tile " + std::to_string(tiles.v_tile) + " does not divide head_dim " +
                              std::to_string(d) + " (as the layout stores it)");
  return "";
}

}  // namespace kvsim::kernels
