#include "kernels/genie_kv_buffer.hpp"

#include <cmath>
#include <cstring>
#include <stdexcept>

namespace kvsim::kernels {

GenieKvBuffer::GenieKvBuffer(int64_t n_ctx, int64_t heads, int64_t head_dim, KvDtype dtype,
                             GenieUpdateMode mode, int64_t variant, Int8Params int8)
    : n_ctx_(n_ctx),
      heads_(heads),
      head_dim_(head_dim),
      dtype_(dtype),
      mode_(mode),
      int8_(int8),
      bw_(kv_dtype_bytes(dtype)),
      variant_(variant) {
  if (variant <= 0 || variant > n_ctx)
    throw std::invalid_argument("genie: variant outside 1..n_ctx");
  cache_dim_ = variant == n_ctx ? n_ctx : n_ctx - variant;
  allocate();
}

uint8_t GenieKvBuffer::pad_byte() const {
  // Seed 002: fp16 pads with 0, int8 with the quantisation offset.
  return dtype_ == KvDtype::int8 ? int8_.pad_value() : 0;
}

void GenieKvBuffer::allocate() {
  stride_ = mode_ == GenieUpdateMode::pointer_shift ? 2 * cache_dim_ : cache_dim_;
  offset_ = 0;
  key_.assign(static_cast<size_t>(heads_ * head_dim_ * stride_ * bw_), pad_byte());
  value_.assign(static_cast<size_t>(heads_ * stride_ * head_dim_ * bw_), pad_byte());
}

int64_t GenieKvBuffer::key_index(int64_t head, int64_t dim, int64_t col) const {
  return (head * head_dim_ + dim) * stride_ + offset_ + col;
}
int64_t GenieKvBuffer::value_index(int64_t head, int64_t col, int64_t dim) const {
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

float GenieKvBuffer::key(int64_t head, int64_t dim, int64_t col) const {
  return load(key_, key_index(head, dim, col));
}
float GenieKvBuffer::value(int64_t head, int64_t col, int64_t dim) const {
  return load(value_, value_index(head, col, dim));
}

bool GenieKvBuffer::column_valid(int64_t col) const {
  if (mode_ == GenieUpdateMode::smart_mask) return col < n_valid_;
  return col >= cache_dim_ - n_valid_;
}

void GenieKvBuffer::repack() {
  // pointer_shift ran out of slack: one memmove per row brings the view home.
  const int64_t key_rows = heads_ * head_dim_;
  for (int64_t r = 0; r < key_rows; ++r) {
    uint8_t* row = key_.data() + r * stride_ * bw_;
    std::memmove(row, row + offset_ * bw_, static_cast<size_t>(cache_dim_ * bw_));
    std::memset(row + cache_dim_ * bw_, pad_byte(),
                static_cast<size_t>((stride_ - cache_dim_) * bw_));
  }
  for (int64_t h = 0; h < heads_; ++h) {
    uint8_t* row = value_.data() + h * stride_ * head_dim_ * bw_;
    std::memmove(row, row + offset_ * head_dim_ * bw_,
                 static_cast<size_t>(cache_dim_ * head_dim_ * bw_));
    std::memset(row + cache_dim_ * head_dim_ * bw_, pad_byte(),
                static_cast<size_t>((stride_ - cache_dim_) * head_dim_ * bw_));
  }
  bytes_moved_ += static_cast<uint64_t>(2 * heads_ * head_dim_ * cache_dim_ * bw_);
  offset_ = 0;
}

void GenieKvBuffer::append(const float* k, const float* v, int64_t n) {
  if (n < 0 || n_valid_ + n > cache_dim_)
    throw std::length_error("genie: new entries do not fit the cache (sliding window is issue 4)");
  const int64_t key_rows = heads_ * head_dim_;
  int64_t first_col = 0;  // view column of the first new entry
  switch (mode_) {
    case GenieUpdateMode::shift_concat: {
      // nsp-kvmanager: std::memmove(dst, dst + copy_size, ...) then memcpy at the end.
      for (int64_t r = 0; r < key_rows; ++r) {
        uint8_t* row = key_.data() + r * stride_ * bw_;
        std::memmove(row, row + n * bw_, static_cast<size_t>((cache_dim_ - n) * bw_));
      }
      for (int64_t h = 0; h < heads_; ++h) {
        uint8_t* row = value_.data() + h * stride_ * head_dim_ * bw_;
        std::memmove(row, row + n * head_dim_ * bw_,
                     static_cast<size_t>((cache_dim_ - n) * head_dim_ * bw_));
      }
      bytes_moved_ += static_cast<uint64_t>(2 * heads_ * head_dim_ * (cache_dim_ - n) * bw_);
      first_col = cache_dim_ - n;
      break;
    }
    case GenieUpdateMode::pointer_shift: {
      if (offset_ + cache_dim_ + n > stride_) repack();
      // New entries go just past the view's end, then the view slides over them.
      offset_ += n;
      first_col = cache_dim_ - n;
      break;
    }
    case GenieUpdateMode::smart_mask:
      first_col = n_valid_;
      break;
  }
  for (int64_t i = 0; i < n; ++i) {
    for (int64_t h = 0; h < heads_; ++h) {
      for (int64_t c = 0; c < head_dim_; ++c) {
        const int64_t src = (i * heads_ + h) * head_dim_ + c;
        store(key_, key_index(h, c, first_col + i), k[src]);
        store(value_, value_index(h, first_col + i, c), v[src]);
      }
    }
  }
  bytes_moved_ += static_cast<uint64_t>(2 * n * heads_ * head_dim_ * bw_);
  n_valid_ += n;
}

void GenieKvBuffer::switch_variant(int64_t n) {
  if (n <= 0 || n > n_ctx_) throw std::invalid_argument("genie: variant outside 1..n_ctx");
  const int64_t out_dim = n == n_ctx_ ? n_ctx_ : n_ctx_ - n;
  if (n_valid_ > out_dim) throw std::length_error("genie: valid entries exceed the new variant");
  // Read the valid entries through the old view, rebuild, write them back
  // where the new view expects them (switchKeyVariant's realignment).
  std::vector<float> k(static_cast<size_t>(n_valid_ * heads_ * head_dim_)), v(k.size());
  int64_t i = 0;
  for (int64_t col = 0; col < cache_dim_; ++col) {
    if (!column_valid(col)) continue;
    for (int64_t h = 0; h < heads_; ++h)
      for (int64_t c = 0; c < head_dim_; ++c) {
        k[static_cast<size_t>((i * heads_ + h) * head_dim_ + c)] = key(h, c, col);
        v[static_cast<size_t>((i * heads_ + h) * head_dim_ + c)] = value(h, col, c);
      }
    ++i;
  }
  const int64_t count = n_valid_;
  variant_ = n;
  cache_dim_ = out_dim;
  n_valid_ = 0;
  allocate();
  const uint64_t before = bytes_moved_;
  append(k.data(), v.data(), count);
  // A realignment moves each valid entry once, whatever the mode.
  bytes_moved_ = before + static_cast<uint64_t>(2 * count * heads_ * head_dim_ * bw_);
}

void GenieKvBuffer::attend(const float* q, int64_t q_heads, float scale, float* out) const {
  const int64_t group = q_heads / heads_;
  std::vector<float> w(static_cast<size_t>(cache_dim_));
  for (int64_t qh = 0; qh < q_heads; ++qh) {
    const int64_t h = qh / group;
    float mx = -INFINITY;
    for (int64_t col = 0; col < cache_dim_; ++col) {
      if (!column_valid(col)) continue;
      float s = 0;
      for (int64_t c = 0; c < head_dim_; ++c) s += q[qh * head_dim_ + c] * key(h, c, col);
      w[static_cast<size_t>(col)] = s * scale;
      mx = std::max(mx, s * scale);
    }
    float sum = 0;
    for (int64_t col = 0; col < cache_dim_; ++col) {
      const float e = column_valid(col) ? std::exp(w[static_cast<size_t>(col)] - mx) : 0.0f;
      w[static_cast<size_t>(col)] = e;
      sum += e;
    }
    for (int64_t c = 0; c < head_dim_; ++c) {
      float acc = 0;
      for (int64_t col = 0; col < cache_dim_; ++col)
        if (w[static_cast<size_t>(col)] != 0.0f)
          acc += w[static_cast<size_t>(col)] * value(h, col, c);
      out[qh * head_dim_ + c] = sum > 0 ? acc / sum : 0.0f;
    }
  }
}

}  // namespace kvsim::kernels
