#include "kernels/genie_kv_buffer.hpp"

#include <algorithm>
#include <cmath>
#include <cstring>
#include <stdexcept>

namespace kvsim::kernels {

GenieKvBuffer::GenieKvBuffer(int64_t n_ctx, int64_t heads, int64_t head_dim, KvDtype dtype,
                             GenieUpdateMode mode, int64_t variant, Int8Params int8,
                             int64_t pointer_shift_headroom, NativeKvTiles tiles)
    : n_ctx_(n_ctx),
      heads_(heads),
      head_dim_(head_dim),
      dtype_(dtype),
      mode_(mode),
      int8_(int8),
      bw_(kv_dtype_bytes(dtype)),
      variant_(variant),
      headroom_(pointer_shift_headroom > 0 ? pointer_shift_headroom : n_ctx),
      tiles_(tiles),
      stored_dim_(mode == GenieUpdateMode::native_kv ? native_kv_head_dim(head_dim) : head_dim) {
  if (variant <= 0 || variant > n_ctx)
    throw std::invalid_argument("genie: variant outside 1..n_ctx");
  cache_dim_ = variant == n_ctx ? n_ctx : n_ctx - variant;
  if (mode_ == GenieUpdateMode::native_kv) {
    if (const std::string why = native_kv_layout_error(n_ctx, head_dim, tiles_); !why.empty())
      throw std::invalid_argument("genie native_kv: " + why);
    cache_dim_ = native_kv_budget(n_ctx, variant);
  }
  allocate();
}

bool GenieKvBuffer::in_place() const {
  return mode_ == GenieUpdateMode::smart_mask || mode_ == GenieUpdateMode::native_kv;
}

uint8_t GenieKvBuffer::pad_byte() const {
  // Seed 002: fp16 pads with 0, int8 with the quantisation offset; NativeKV
  // clears to 0 whatever the type ("HMX does not apply an offset for NativeKV
  // tensor", native-kv.cpp completeInit).
  if (mode_ == GenieUpdateMode::native_kv) return 0;
  return dtype_ == KvDtype::int8 ? int8_.pad_value() : 0;
}

void GenieKvBuffer::allocate() {
  // pointer_shift rows keep their length across variants (the view moves in
  // them); the other modes' rows are the variant's cache dim.
  // native_kv's rows are ctx_size columns for every variant ("All AR-n
  // variants have the same shape", native-kv.cpp reshapeCache).
  stride_ = mode_ == GenieUpdateMode::pointer_shift ? n_ctx_ + headroom_
            : mode_ == GenieUpdateMode::native_kv   ? n_ctx_
                                                    : cache_dim_;
  offset_ = 0;
  ring_start_ = 0;
  key_.assign(static_cast<size_t>(heads_ * stored_dim_ * stride_ * bw_), pad_byte());
  value_.assign(static_cast<size_t>(heads_ * stride_ * stored_dim_ * bw_), pad_byte());
}

int64_t GenieKvBuffer::key_index(int64_t head, int64_t dim, int64_t col) const {
  // native_kv: per head a [head_dim, ctx_size] matrix tiled by k_tile.
  if (mode_ == GenieUpdateMode::native_kv)
    return head * stored_dim_ * stride_ + hmx_offset(stored_dim_, stride_, tiles_.k_tile, dim, col);
  return (head * head_dim_ + dim) * stride_ + offset_ + col;
}
int64_t GenieKvBuffer::value_index(int64_t head, int64_t col, int64_t dim) const {
  // native_kv: per head a [ctx_size, head_dim] matrix tiled by v_tile.
  if (mode_ == GenieUpdateMode::native_kv)
    return head * stride_ * stored_dim_ + hmx_offset(stride_, stored_dim_, tiles_.v_tile, col, dim);
  return (head * stride_ + offset_ + col) * head_dim_ + dim;
}

float GenieKvBuffer::load(const std::vector<uint8_t>& buf, int64_t index) const {
  float x = 0;
  decode_row(dtype_, buf.data() + index * bw_, 1, int8_, &x);
  return x;
}

void GenieKvBuffer::store(std::vector<uint8_t>& buf, int64_t index, float x) {
  uint8_t* dst = buf.data() + index * bw_;
  if (dtype_ == KvDtype::int8) {
    *dst = quantize_int8(x, int8_);
  } else {
    encode_row(dtype_, &x, 1, dst);
  }
}

void GenieKvBuffer::round_trip(float* values, int64_t n) const {
  if (dtype_ == KvDtype::int8) {
    for (int64_t i = 0; i < n; ++i)
      values[i] = dequantize_int8(quantize_int8(values[i], int8_), int8_);
  } else {
    round_trip_row(dtype_, values, n, values);
  }
}

float GenieKvBuffer::key(int64_t head, int64_t dim, int64_t col) const {
  return load(key_, key_index(head, dim, col));
}
float GenieKvBuffer::value(int64_t head, int64_t col, int64_t dim) const {
  return load(value_, value_index(head, col, dim));
}

bool GenieKvBuffer::column_valid(int64_t col) const {
  if (in_place()) return (col - ring_start_ + cache_dim_) % cache_dim_ < n_valid_;
  return col >= cache_dim_ - n_valid_;
}

int64_t GenieKvBuffer::valid_column(int64_t i) const {
  if (in_place()) return (ring_start_ + i) % cache_dim_;
  return cache_dim_ - n_valid_ + i;
}

void GenieKvBuffer::move_columns(int64_t from, int64_t to, int64_t count) {
  // Physical columns of every row: K rows are [head, dim] x stride columns,
  // V rows are head x (stride x head_dim).
  if (count <= 0 || from == to) return;
  const int64_t key_rows = heads_ * head_dim_;
  for (int64_t r = 0; r < key_rows; ++r) {
    uint8_t* row = key_.data() + r * stride_ * bw_;
    std::memmove(row + to * bw_, row + from * bw_, static_cast<size_t>(count * bw_));
  }
  const int64_t vcol = head_dim_ * bw_;
  for (int64_t h = 0; h < heads_; ++h) {
    uint8_t* row = value_.data() + h * stride_ * vcol;
    std::memmove(row + to * vcol, row + from * vcol, static_cast<size_t>(count * vcol));
  }
  bytes_moved_ += static_cast<uint64_t>(2 * heads_ * head_dim_ * count * bw_);
}

void GenieKvBuffer::pad_columns(int64_t first, int64_t count) {
  if (count <= 0) return;
  const int64_t key_rows = heads_ * head_dim_;
  for (int64_t r = 0; r < key_rows; ++r)
    std::memset(key_.data() + (r * stride_ + first) * bw_, pad_byte(),
                static_cast<size_t>(count * bw_));
  const int64_t vcol = head_dim_ * bw_;
  for (int64_t h = 0; h < heads_; ++h)
    std::memset(value_.data() + h * stride_ * vcol + first * vcol, pad_byte(),
                static_cast<size_t>(count * vcol));
  bytes_moved_ += static_cast<uint64_t>(2 * heads_ * head_dim_ * count * bw_);
}

void GenieKvBuffer::repack() {
  // pointer_shift ran out of slack: one memmove per row brings the valid
  // columns to the right end of the view at offset 0.
  move_columns(offset_ + cache_dim_ - n_valid_, cache_dim_ - n_valid_, n_valid_);
  offset_ = 0;
}

void GenieKvBuffer::append_selected(const float* k, const float* v,
                                    const std::vector<bool>& selected) {
  // The seed copies the chosen entries one by one into consecutive columns:
  // the same bytes as appending them packed, so gather, then append.
  const int64_t entry = heads_ * head_dim_;
  std::vector<float> kk, vv;
  for (size_t i = 0; i < selected.size(); ++i) {
    if (!selected[i]) continue;
    kk.insert(kk.end(), k + static_cast<int64_t>(i) * entry,
              k + static_cast<int64_t>(i + 1) * entry);
    vv.insert(vv.end(), v + static_cast<int64_t>(i) * entry,
              v + static_cast<int64_t>(i + 1) * entry);
  }
  append(kk.data(), vv.data(), static_cast<int64_t>(kk.size()) / std::max<int64_t>(entry, 1));
}

void GenieKvBuffer::dump_valid(bool is_key, std::vector<uint8_t>& out) const {
  // Element by element through the view: the valid columns need not be
  // contiguous (a smart_mask ring), and the file must not depend on it.
  out.reserve(out.size() + static_cast<size_t>(dump_bytes()));
  const auto put = [&](const std::vector<uint8_t>& buf, int64_t index) {
    const uint8_t* at = buf.data() + index * bw_;
    out.insert(out.end(), at, at + bw_);
  };
  for (int64_t h = 0; h < heads_; ++h) {
    if (is_key) {
      for (int64_t c = 0; c < head_dim_; ++c)
        for (int64_t i = 0; i < n_valid_; ++i) put(key_, key_index(h, c, valid_column(i)));
    } else {
      for (int64_t i = 0; i < n_valid_; ++i)
        for (int64_t c = 0; c < head_dim_; ++c) put(value_, value_index(h, valid_column(i), c));
    }
  }
}

void GenieKvBuffer::load_valid(const uint8_t* keys, const uint8_t* values, int64_t n) {
  if (n < 0 || n > cache_dim_)
    throw std::length_error("genie: loaded entries exceed the cache dim");
  allocate();  // clearBuffer: the pad value everywhere, offset and ring at 0
  n_valid_ = n;
  for (int64_t h = 0; h < heads_; ++h)
    for (int64_t c = 0; c < head_dim_; ++c)
      for (int64_t i = 0; i < n; ++i, keys += bw_)
        std::memcpy(key_.data() + key_index(h, c, valid_column(i)) * bw_, keys,
                    static_cast<size_t>(bw_));
  for (int64_t h = 0; h < heads_; ++h)
    for (int64_t i = 0; i < n; ++i)
      for (int64_t c = 0; c < head_dim_; ++c, values += bw_)
        std::memcpy(value_.data() + value_index(h, valid_column(i), c) * bw_, values,
                    static_cast<size_t>(bw_));
}

void GenieKvBuffer::append(const float* k, const float* v, int64_t n) {
  if (n < 0 || n_valid_ + n > cache_dim_)
    throw std::length_error("genie: new entries do not fit the cache dim");
  int64_t first_col = cache_dim_ - n;  // view column of the first new entry
  switch (mode_) {
    case GenieUpdateMode::shift_concat:
      // nsp-kvmanager: memmove the kept columns left by n, then memcpy at the end.
      move_columns(cache_dim_ - n_valid_, cache_dim_ - n_valid_ - n, n_valid_);
      break;
    case GenieUpdateMode::pointer_shift:
      if (offset_ + cache_dim_ + n > stride_) repack();
      // New entries go just past the view's end, then the view slides over them.
      offset_ += n;
      break;
    case GenieUpdateMode::smart_mask:
    case GenieUpdateMode::native_kv:
      first_col = -1;  // in place, after the newest entry (ring)
      break;
  }
  for (int64_t i = 0; i < n; ++i) {
    const int64_t col = first_col >= 0 ? first_col + i : (ring_start_ + n_valid_ + i) % cache_dim_;
    for (int64_t h = 0; h < heads_; ++h) {
      for (int64_t c = 0; c < head_dim_; ++c) {
        const int64_t src = (i * heads_ + h) * head_dim_ + c;
        store(key_, key_index(h, c, col), k[src]);
        store(value_, value_index(h, col, c), v[src]);
      }
    }
  }
  bytes_moved_ += static_cast<uint64_t>(2 * n * heads_ * head_dim_ * bw_);
  n_valid_ += n;
}

void GenieKvBuffer::rewind(int64_t n) {
  if (n < 0 || n > n_valid_) throw std::length_error("genie: rewind past the cached entries");
  const int64_t kept = n_valid_ - n;
  switch (mode_) {
    case GenieUpdateMode::shift_concat:
      // seed 002, n_update < 0: memmove(dst + copy_size, dst, ...) then memset the pad.
      move_columns(cache_dim_ - n_valid_, cache_dim_ - kept, kept);
      pad_columns(cache_dim_ - n_valid_, n);
      break;
    case GenieUpdateMode::pointer_shift:
      if (offset_ >= n) {
        offset_ -= n;  // the view slides back over the kept entries
      } else {
        move_columns(offset_ + cache_dim_ - n_valid_, cache_dim_ - kept, kept);
        offset_ = 0;
      }
      break;
    case GenieUpdateMode::smart_mask:
      break;  // the mask forgets them
    case GenieUpdateMode::native_kv:
      zero_entries(kept, n);  // reduceKV writes 0 over each removed entry
      break;
  }
  n_valid_ = kept;
}

void GenieKvBuffer::evict_oldest(int64_t n) {
  if (n < 0 || n > n_valid_) throw std::length_error("genie: eviction past the cached entries");
  switch (mode_) {
    case GenieUpdateMode::shift_concat:
      pad_columns(cache_dim_ - n_valid_, n);  // keep "pad, then valid"
      break;
    case GenieUpdateMode::pointer_shift:
      break;  // attention reads only the n_valid rightmost columns
    case GenieUpdateMode::smart_mask:
    case GenieUpdateMode::native_kv:
      ring_start_ = (ring_start_ + n) % cache_dim_;
      break;
  }
  n_valid_ -= n;
}

void GenieKvBuffer::clear() {
  switch (mode_) {
    case GenieUpdateMode::shift_concat:
      pad_columns(cache_dim_ - n_valid_, n_valid_);
      break;
    case GenieUpdateMode::pointer_shift:
      offset_ = 0;
      break;
    case GenieUpdateMode::smart_mask:
      ring_start_ = 0;
      break;
    case GenieUpdateMode::native_kv:
      // NativeKV::clear memsets the whole buffer: ctx_size columns of every
      // K row and V head (the dense element count; a head_dim pad is not
      // counted, real HTP heads have none).
      std::fill(key_.begin(), key_.end(), uint8_t{0});
      std::fill(value_.begin(), value_.end(), uint8_t{0});
      bytes_moved_ += static_cast<uint64_t>(2 * heads_ * head_dim_ * n_ctx_ * bw_);
      ring_start_ = 0;
      break;
  }
  n_valid_ = 0;
}

void GenieKvBuffer::zero_entries(int64_t first, int64_t n) {
  for (int64_t i = first; i < first + n; ++i) {
    const int64_t col = valid_column(i);
    for (int64_t h = 0; h < heads_; ++h)
      for (int64_t c = 0; c < head_dim_; ++c) {
        std::memset(key_.data() + key_index(h, c, col) * bw_, 0, static_cast<size_t>(bw_));
        std::memset(value_.data() + value_index(h, col, c) * bw_, 0, static_cast<size_t>(bw_));
      }
  }
  bytes_moved_ += static_cast<uint64_t>(2 * heads_ * head_dim_ * n * bw_);
}

void GenieKvBuffer::native_switch(int64_t out_dim) {
  // Every AR-n graph takes the same ctx_size-column tensors, so the entries
  // stay where they are (reshapeCache is a no-op at the same ctx_size) while
  // they lie, unwrapped, inside the new budget; a ring that wraps or runs
  // past it is re-packed to start at column 0 (each entry moved once).
  const int64_t count = n_valid_;
  if (ring_start_ + count > std::min(cache_dim_, out_dim)) {
    std::vector<uint8_t> k(static_cast<size_t>(count * heads_ * head_dim_ * bw_)), v(k.size());
    size_t at = 0;
    for (int64_t i = 0; i < count; ++i)
      for (int64_t h = 0; h < heads_; ++h)
        for (int64_t c = 0; c < head_dim_; ++c, at += static_cast<size_t>(bw_)) {
          std::memcpy(&k[at], key_.data() + key_index(h, c, valid_column(i)) * bw_,
                      static_cast<size_t>(bw_));
          std::memcpy(&v[at], value_.data() + value_index(h, valid_column(i), c) * bw_,
                      static_cast<size_t>(bw_));
        }
    // The copy above is a scratch of this implementation; qualla moves the
    // entries in place (moveKV). Only the move is counted.
    std::fill(key_.begin(), key_.end(), uint8_t{0});
    std::fill(value_.begin(), value_.end(), uint8_t{0});
    ring_start_ = 0;
    at = 0;
    for (int64_t i = 0; i < count; ++i)
      for (int64_t h = 0; h < heads_; ++h)
        for (int64_t c = 0; c < head_dim_; ++c, at += static_cast<size_t>(bw_)) {
          std::memcpy(key_.data() + key_index(h, c, i) * bw_, &k[at], static_cast<size_t>(bw_));
          std::memcpy(value_.data() + value_index(h, i, c) * bw_, &v[at], static_cast<size_t>(bw_));
        }
    bytes_moved_ += static_cast<uint64_t>(2 * count * heads_ * head_dim_ * bw_);
  }
  cache_dim_ = out_dim;
}

void GenieKvBuffer::switch_variant(int64_t n) {
  if (n <= 0 || n > n_ctx_) throw std::invalid_argument("genie: variant outside 1..n_ctx");
  const int64_t out_dim = mode_ == GenieUpdateMode::native_kv ? native_kv_budget(n_ctx_, n)
                          : n == n_ctx_                       ? n_ctx_
                                                              : n_ctx_ - n;
  if (n_valid_ > out_dim) throw std::length_error("genie: valid entries exceed the new variant");
  if (mode_ == GenieUpdateMode::native_kv) {
    native_switch(out_dim);
    variant_ = n;
    return;
  }
  // Read the valid entries, oldest first, through the old view, rebuild,
  // write them where the new view expects them (switchKeyVariant).
  const int64_t count = n_valid_;
  std::vector<float> k(static_cast<size_t>(count * heads_ * head_dim_)), v(k.size());
  for (int64_t i = 0; i < count; ++i) {
    const int64_t col = valid_column(i);
    for (int64_t h = 0; h < heads_; ++h)
      for (int64_t c = 0; c < head_dim_; ++c) {
        k[static_cast<size_t>((i * heads_ + h) * head_dim_ + c)] = key(h, c, col);
        v[static_cast<size_t>((i * heads_ + h) * head_dim_ + c)] = value(h, col, c);
      }
  }
  variant_ = n;
  cache_dim_ = out_dim;
  allocate();
  const int64_t first = mode_ == GenieUpdateMode::smart_mask ? 0 : cache_dim_ - count;
  for (int64_t i = 0; i < count; ++i)
    for (int64_t h = 0; h < heads_; ++h)
      for (int64_t c = 0; c < head_dim_; ++c) {
        const size_t src = static_cast<size_t>((i * heads_ + h) * head_dim_ + c);
        store(key_, key_index(h, c, first + i), k[src]);
        store(value_, value_index(h, first + i, c), v[src]);
      }
  // A realignment moves each valid entry once, whatever the mode.
  bytes_moved_ += static_cast<uint64_t>(2 * count * heads_ * head_dim_ * bw_);
}

void GenieKvBuffer::attend(const float* q, int64_t q_heads, float scale, float* out,
                           const float* new_k, const float* new_v, int64_t n_new) const {
  const int64_t group = q_heads / heads_;
  // Scores of the cache's columns [0, cache_dim) then of the new entries.
  std::vector<float> w(static_cast<size_t>(cache_dim_ + n_new));
  std::vector<uint8_t> valid(w.size());
  for (int64_t col = 0; col < cache_dim_; ++col)
    valid[static_cast<size_t>(col)] = column_valid(col);
  for (int64_t i = 0; i < n_new; ++i) valid[static_cast<size_t>(cache_dim_ + i)] = 1;
  auto new_row = [&](const float* base, int64_t i, int64_t h) {
    return base + (i * heads_ + h) * head_dim_;
  };
  for (int64_t qh = 0; qh < q_heads; ++qh) {
    const int64_t h = qh / group;
    float mx = -INFINITY;
    for (int64_t col = 0; col < cache_dim_ + n_new; ++col) {
      if (!valid[static_cast<size_t>(col)]) continue;
      float s = 0;
      if (col < cache_dim_) {
        for (int64_t c = 0; c < head_dim_; ++c) s += q[qh * head_dim_ + c] * key(h, c, col);
      } else {
        const float* kr = new_row(new_k, col - cache_dim_, h);
        for (int64_t c = 0; c < head_dim_; ++c) s += q[qh * head_dim_ + c] * kr[c];
      }
      w[static_cast<size_t>(col)] = s * scale;
      mx = std::max(mx, s * scale);
    }
    float sum = 0;
    for (size_t col = 0; col < w.size(); ++col) {
      const float e = valid[col] ? std::exp(w[col] - mx) : 0.0f;
      w[col] = e;
      sum += e;
    }
    for (int64_t c = 0; c < head_dim_; ++c) {
      float acc = 0;
      for (int64_t col = 0; col < cache_dim_ + n_new; ++col) {
        const float wc = w[static_cast<size_t>(col)];
        if (wc == 0.0f) continue;
        acc += wc * (col < cache_dim_ ? value(h, col, c) : new_row(new_v, col - cache_dim_, h)[c]);
      }
      out[qh * head_dim_ + c] = sum > 0 ? acc / sum : 0.0f;
    }
  }
}

}  // namespace kvsim::kernels
