#pragma once
// A real paged KV pool: num_blocks Ksana blocks [2, layers, block_tokens,
// kv_heads, head_dim] in one contiguous allocation (seed 000), elements of a
// KvDtype. The ATB kcache/vcache view (block id b * layers * 2 + layer,
// vcache at its base offset) reads the same bytes: atb_row() and row() are
// two addressings of one buffer (kernels/kv_layout.hpp has the formulas).
// int8 rows carry their (scale, offset) in a side table indexed like the rows.
// The buffer starts zeroed from calloc, whose large allocations are fresh
// pages the kernel maps on first touch: a shadow pool as large as the real
// one costs memory and time only for the blocks that are written or read.
#include <cstdint>
#include <cstdlib>
#include <memory>
#include <vector>

#include "kernels/kv_dtype.hpp"
#include "kernels/kv_layout.hpp"

namespace kvsim::kernels {

class KvPool {
 public:
  // fp8_tensor_scale > 0: fp8 rows share that scale (per tensor) instead
  // of each carrying its own (per token and head).
  KvPool(int64_t num_blocks, int64_t layers, int64_t block_tokens, int64_t kv_heads,
         int64_t head_dim, KvDtype dtype, float fp8_tensor_scale = 0.0f);

  const BlockGeometry& geometry() const { return g_; }
  KvDtype dtype() const { return dtype_; }
  int64_t num_blocks() const { return num_blocks_; }
  int64_t layers() const { return g_.layers; }
  int64_t block_tokens() const { return g_.block_tokens; }
  int64_t kv_heads() const { return g_.kv_heads; }
  int64_t head_dim() const { return g_.head_dim; }
  int64_t bytes() const { return bytes_; }

  // Row (head_dim elements) of (block, K/V, layer, token in block, head), Ksana addressing.
  uint8_t* row(int64_t block, KvPart part, int64_t layer, int64_t token, int64_t head);
  const uint8_t* row(int64_t block, KvPart part, int64_t layer, int64_t token, int64_t head) const;
  // The same row through the ATB kcache/vcache view (seed 000). Throws
  // std::out_of_range for an id whose slab lies outside the buffer.
  const uint8_t* atb_row(KvPart part, int64_t atb_block, int64_t token, int64_t head) const;
  uint8_t* atb_row(KvPart part, int64_t atb_block, int64_t token, int64_t head);
  // Encodes / decodes one row addressed through the ATB view: what ATB's
  // ReshapeAndCache and PagedAttention do with a kcache/vcache slot.
  void atb_write_row(KvPart part, int64_t atb_block, int64_t token, int64_t head, const float* src);
  void atb_read_row(KvPart part, int64_t atb_block, int64_t token, int64_t head, float* dst) const;

  Int8Params& params(int64_t block, KvPart part, int64_t layer, int64_t token, int64_t head);
  const Int8Params& params(int64_t block, KvPart part, int64_t layer, int64_t token,
                           int64_t head) const;

  // Encodes / decodes one row in fp32.
  void write_row(int64_t block, KvPart part, int64_t layer, int64_t token, int64_t head,
                 const float* src);
  void read_row(int64_t block, KvPart part, int64_t layer, int64_t token, int64_t head,
                float* dst) const;
  // Encodes n consecutive tokens' rows of every head, src [n, kv_heads,
  // head_dim], from `token` on (contiguous in the Ksana layout: one encode
  // for dtypes without row parameters).
  void write_rows(int64_t block, KvPart part, int64_t layer, int64_t token, int64_t n,
                  const float* src);
  // Decodes them back: dst [n, kv_heads, head_dim].
  void read_rows(int64_t block, KvPart part, int64_t layer, int64_t token, int64_t n,
                 float* dst) const;
  // write_rows, and what the rows now hold into `stored` (read_rows' values).
  void write_rows_stored(int64_t block, KvPart part, int64_t layer, int64_t token, int64_t n,
                         const float* src, float* stored);

  // Whole-block copies (swap out to a host buffer and back in, seed 001).
  void copy_block_out(int64_t block, std::vector<uint8_t>& bytes,
                      std::vector<Int8Params>& params) const;
  void copy_block_in(int64_t block, const std::vector<uint8_t>& bytes,
                     const std::vector<Int8Params>& params);
  // Asks the OS to back the buffer with huge pages where it can (Linux
  // transparent huge pages, madvise mode): one fault per 2 MiB instead of
  // per 4 KiB. For users that fill the pool densely from block 0 up (the
  // sampled checker's slots); a pool written at scattered blocks would hold
  // a huge page for each.
  void prefer_huge_pages();
  // Zeroes a block (a block never written reads as zeros, as a fresh pool's).
  void clear_block(int64_t block);
  uint8_t* data() { return data_.get(); }

 private:
  int64_t param_index(int64_t block, KvPart part, int64_t layer, int64_t token, int64_t head) const;
  // The slab (one block_tokens x heads x head_dim piece) an ATB view id
  // names, counted from the pool base: the vcache view starts `layers`
  // slabs in. Checked against the buffer.
  int64_t atb_slab(KvPart part, int64_t atb_block) const;
  int64_t rows_per_block() const { return 2 * g_.layers * g_.block_tokens * g_.kv_heads; }

  BlockGeometry g_;
  KvDtype dtype_;
  float fp8_tensor_scale_;
  int64_t num_blocks_;
  struct Free {
    void operator()(uint8_t* p) const { std::free(p); }
  };
  int64_t bytes_ = 0;
  std::unique_ptr<uint8_t[], Free> data_;
  std::vector<Int8Params> params_;  // int8 only
};

}  // namespace kvsim::kernels
