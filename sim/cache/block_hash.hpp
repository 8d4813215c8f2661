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
// The hash of a block whose ids are positions [offset, offset + count) of the
// counter-based stream (key, vocab_size) (workloads/rng.hpp TokenStream),
// computed from those numbers instead of the ids. Equal content gets equal
// hashes as long as a workload always describes the same ids the same way
// (workloads/token_content.hpp); the domain tag keeps these apart from
// hashes of ids.
BlockHash chained_stream_block_hash(const BlockHash& parent, uint64_t key, int64_t vocab_size,
                                    int64_t offset, int64_t count);

}  // namespace kvsim
