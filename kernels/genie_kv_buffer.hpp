#pragma once
// Genie's on-device KV buffers for one layer (seed 002, nsp-kvmanager):
// the key cache is transposed, [heads, head_dim, cache_dim], and the value
// cache is per head, [heads, cache_dim, head_dim]; cache_dim = n_ctx - n for
// the AR-n variant (n_ctx for the BERT variant). Valid entries are
// left-padded: the newest entry is the rightmost column and columns before
// the oldest hold the pad value (0 for fp, -offset for int8). Three ways to
// append the step's new K/V:
//   shift_concat:  memmove every row left by n, copy the n new columns at its end;
//   pointer_shift: rows have slack; copy the n new columns past the view's
//                  end and move the shared view offset right by n (re-packed
//                  with one memmove when the slack runs out);
//   smart_mask:    never move: write column n_valid in place (left-aligned)
//                  and let the attention mask select the valid columns.
// All three present the same attention result (SPEC 8); bytes_moved() tells
// what each one cost.
#include <cstdint>
#include <vector>

#include "kernels/kv_dtype.hpp"

namespace kvsim::kernels {

enum class GenieUpdateMode : uint8_t { shift_concat, pointer_shift, smart_mask };

class GenieKvBuffer {
 public:
  // int8 uses one tensor-wide (scale, offset), as QNN's quantParam[0] (seed 002).
  GenieKvBuffer(int64_t n_ctx, int64_t heads, int64_t head_dim, KvDtype dtype, GenieUpdateMode mode,
                int64_t variant, Int8Params int8 = {});

  int64_t cache_dim() const { return cache_dim_; }
  int64_t n_valid() const { return n_valid_; }
  int64_t variant() const { return variant_; }
  uint64_t bytes_moved() const { return bytes_moved_; }
  uint8_t pad_byte() const;

  // Appends n new entries, k and v [n, heads, head_dim]. Throws when they do not fit.
  void append(const float* k, const float* v, int64_t n);
  // Realigns the buffers from the current AR-m variant to AR-n (switchKeyVariant).
  void switch_variant(int64_t n);

  // The view the model reads, column `col` in [0, cache_dim).
  float key(int64_t head, int64_t dim, int64_t col) const;
  float value(int64_t head, int64_t col, int64_t dim) const;
  bool column_valid(int64_t col) const;  // the attention mask over the view

  // One query [q_heads, head_dim] over the valid columns; out [q_heads, head_dim].
  void attend(const float* q, int64_t q_heads, float scale, float* out) const;

 private:
  // A strip: `rows` rows of `stride` columns of `width` elements; the view
  // is columns [offset, offset + cache_dim) of every row.
  int64_t key_index(int64_t head, int64_t dim, int64_t col) const;
  int64_t value_index(int64_t head, int64_t col, int64_t dim) const;
  float load(const std::vector<uint8_t>& buf, int64_t index) const;
  void store(std::vector<uint8_t>& buf, int64_t index, float x);
  void allocate();
  void repack();  // pointer_shift: move the view back to offset 0

  int64_t n_ctx_, heads_, head_dim_;
  KvDtype dtype_;
  GenieUpdateMode mode_;
  Int8Params int8_;
  int64_t bw_;  // bytes per element
  int64_t variant_ = 1;
  int64_t cache_dim_ = 0;
  int64_t stride_ = 0;  // columns per row in memory
  int64_t offset_ = 0;  // pointer_shift's view offset, in columns
  int64_t n_valid_ = 0;
  std::vector<uint8_t> key_, value_;
  uint64_t bytes_moved_ = 0;
};

}  // namespace kvsim::kernels
