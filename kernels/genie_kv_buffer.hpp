#pragma once
// Genie's on-device KV buffers for one layer (seed 002, nsp-kvmanager):
// the key cache is transposed, [heads, head_dim, cache_dim], and the value
// cache is per head, [heads, cache_dim, head_dim]; cache_dim = n_ctx - n for
// the AR-n variant (n_ctx for the BERT variant). Valid entries are
// left-padded: the newest entry is the rightmost column and columns before
// the oldest hold the pad value (0 for fp, -offset for int8). Three ways to
// append the step's new K/V:
//   shift_concat:  memmove each row's valid columns left by n, copy the n new
//                  columns at its end;
//   pointer_shift: rows have slack (n_ctx + headroom columns, headroom 0
//                  meaning n_ctx); copy the n new columns past the view's
//                  end and move the shared view offset right by n (the valid
//                  columns re-packed to offset 0 with one memmove when the
//                  slack runs out);
//   smart_mask:    never move: write the next column in place (left-aligned,
//                  a ring once a window evicts the oldest) and let the
//                  attention mask select the valid columns.
//   native_kv:     smart_mask's columns, stored in the tiled layout the QNN
//                  compiler picks (kernels/native_kv_layout.hpp): rows of
//                  ctx_size columns for every variant, a cache budget of
//                  ctx_size - round_up(n, 32), a variant switch that moves
//                  nothing, a rewind that zeroes the dropped entries.
// Only the valid columns are ever moved (a memmove restricted to them leaves
// the same buffer as the seed's whole-row memmove). Rewind drops the newest
// entries (shift_concat: memmove right + memset pad, seed 002's n_update < 0
// path; pointer_shift: offset back; smart_mask: mask), evict_oldest drops
// the oldest (sliding window; shift_concat pads them), clear empties it.
// All three present the same attention result (SPEC 8); bytes_moved() tells
// what each one cost, and equals the closed forms of sim/cache/*_policy.cpp.
#include <cstdint>
#include <vector>

#include "kernels/kv_dtype.hpp"
#include "kernels/native_kv_layout.hpp"

namespace kvsim::kernels {

enum class GenieUpdateMode : uint8_t { shift_concat, pointer_shift, smart_mask, native_kv };

class GenieKvBuffer {
 public:
  // int8 uses one tensor-wide (scale, offset), as QNN's quantParam[0] (seed 002).
  // `tiles` are native_kv's; a shape its layout cannot take throws
  // std::invalid_argument.
  GenieKvBuffer(int64_t n_ctx, int64_t heads, int64_t head_dim, KvDtype dtype, GenieUpdateMode mode,
                int64_t variant, Int8Params int8 = {}, int64_t pointer_shift_headroom = 0,
                NativeKvTiles tiles = {});

  int64_t cache_dim() const { return cache_dim_; }
  int64_t heads() const { return heads_; }
  int64_t head_dim() const { return head_dim_; }
  int64_t n_valid() const { return n_valid_; }
  int64_t variant() const { return variant_; }
  uint64_t bytes_moved() const { return bytes_moved_; }
  uint8_t pad_byte() const;
  int64_t view_offset() const { return offset_; }
  int64_t ring_start() const { return ring_start_; }
  int64_t row_columns() const { return stride_; }

  // Appends n new entries, k and v [n, heads, head_dim]. Throws when they do not fit.
  void append(const float* k, const float* v, int64_t n);
  // dispatchUpdate's `selected` keep-mask (nsp-kvmanager updateKey/updateValue):
  // of the pass's selected.size() entries, k and v [selected.size(), heads,
  // head_dim], only those marked true are appended, in order (tree
  // speculative decoding keeps an accepted path that need not be a prefix).
  void append_selected(const float* k, const float* v, const std::vector<bool>& selected);
  // seed 002 dumpCache: the valid portion's raw bytes, appended to `out`,
  // oldest entry first and independent of the mode's layout: keys as
  // [heads, head_dim, n_valid], values as [heads, n_valid, head_dim].
  void dump_valid(bool is_key, std::vector<uint8_t>& out) const;
  // Bytes dump_valid writes for one of K or V.
  int64_t dump_bytes() const { return heads_ * head_dim_ * n_valid_ * bw_; }
  // seed 002 loadCache: clearBuffer (every column to the pad value), then
  // the n dumped entries where this mode's view keeps them (left-padded;
  // smart_mask from column 0). keys/values as dump_valid wrote them.
  // Storage I/O, not an update copy: bytes_moved() does not count it.
  // Throws std::length_error when n does not fit the cache dim.
  void load_valid(const uint8_t* keys, const uint8_t* values, int64_t n);
  // What values become once stored in this buffer and loaded back (the
  // graph's output tensors share the cache's dtype and quantisation).
  void round_trip(float* values, int64_t n) const;
  // Realigns the buffers from the current AR-m variant to AR-n (switchKeyVariant).
  void switch_variant(int64_t n);
  // Drops the n newest entries (a rejected speculative draft).
  void rewind(int64_t n);
  // Drops the n oldest entries (a sliding window making room).
  void evict_oldest(int64_t n);
  // Empties the cache (dispatch CLEAR_CACHE).
  void clear();

  // The view the model reads, column `col` in [0, cache_dim).
  float key(int64_t head, int64_t dim, int64_t col) const;
  float value(int64_t head, int64_t col, int64_t dim) const;
  bool column_valid(int64_t col) const;  // the attention mask over the view
  // The raw storage and where an element of the view lives in it (tests
  // read native_kv's tiled layout through these).
  const std::vector<uint8_t>& key_storage() const { return key_; }
  const std::vector<uint8_t>& value_storage() const { return value_; }
  int64_t key_index(int64_t head, int64_t dim, int64_t col) const;
  int64_t value_index(int64_t head, int64_t col, int64_t dim) const;

  // One query [q_heads, head_dim] over the valid columns; out [q_heads, head_dim].
  // With n_new > 0 it also attends to n_new entries not in the cache yet,
  // new_k / new_v [n_new, heads, head_dim]: an AR-n graph reads the past from
  // the cache and the pass's own K/V from its output (seed 002), causally.
  void attend(const float* q, int64_t q_heads, float scale, float* out,
              const float* new_k = nullptr, const float* new_v = nullptr, int64_t n_new = 0) const;

 private:
  float load(const std::vector<uint8_t>& buf, int64_t index) const;
  void store(std::vector<uint8_t>& buf, int64_t index, float x);
  void allocate();
  void repack();  // pointer_shift: move the valid columns back to offset 0
  // Moves `count` columns of every K row and V head from view column `from`
  // to view column `to` (memmove), counting the bytes.
  void move_columns(int64_t from, int64_t to, int64_t count);
  void pad_columns(int64_t first, int64_t count);  // memset to the pad value
  int64_t valid_column(int64_t i) const;           // view column of the i-th oldest entry
  bool in_place() const;  // smart_mask or native_kv: entries written where they stay
  // native_kv: zero (its clear value) the n entries from the i-th oldest on.
  void zero_entries(int64_t first, int64_t n);
  // native_kv: a variant switch to `out_dim` columns (nothing moves unless
  // the ring does not fit them).
  void native_switch(int64_t out_dim);

  int64_t n_ctx_, heads_, head_dim_;
  KvDtype dtype_;
  GenieUpdateMode mode_;
  Int8Params int8_;
  int64_t bw_;  // bytes per element
  int64_t variant_ = 1;
  int64_t cache_dim_ = 0;
  int64_t stride_ = 0;  // columns per row in memory
  int64_t offset_ = 0;  // pointer_shift's view offset, in columns
  int64_t headroom_ = 0;
  int64_t ring_start_ = 0;  // smart_mask, native_kv: view column of the oldest entry
  NativeKvTiles tiles_;
  int64_t stored_dim_ = 0;  // head_dim as stored (native_kv pads it to the block)
  int64_t n_valid_ = 0;
  std::vector<uint8_t> key_, value_;
  uint64_t bytes_moved_ = 0;
};

}  // namespace kvsim::kernels
