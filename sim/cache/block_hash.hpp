#pragma once
// Content hash of a full KV block, chained on its parent's hash (vLLM/nano-vllm
// prefix caching, seed 001): two blocks get the same hash exactly when they
// hold the same tokens AND everything before them is the same.
#include <cstddef>
#include <cstdint>
#include <functional>

namespace kvsim {

struct BlockHash {
  uint64_t low = 0;
  uint64_t high = 0;
  bool operator==(const BlockHash&) const = default;
};

struct BlockHashHasher {
  size_t operator()(const BlockHash& h) const noexcept {
    return static_cast<size_t>(h.low ^ (h.high * 0x9E3779B97F4A7C15ull));
  }
};

// XXH3-128 over (parent hash, token ids). The first block's parent is the
// all-zero hash.
BlockHash chained_block_hash(const BlockHash& parent, const int32_t* tokens, size_t count);

}  // namespace kvsim
