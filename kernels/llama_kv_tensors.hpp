#pragma once
// The K/V tensors of llama.cpp's cache (seed 004): per layer one 1-D k_l of
// n_embd_k * kv_size values of type_k and one v_l of n_embd_v * kv_size
// values of type_v, holding real encoded bytes. K is stored cell by cell
// (row `cell` is that cell's n_embd_k values). V is stored the same way, or
// transposed (v_trans, llama.cpp without flash attention): row j of
// kv_size values is channel j of every cell, so one cell's V is a column
// read with a stride of kv_size values. Quantized V needs v_trans off.
//
// Which cell holds what is the cell metadata's business
// (sim/cache/llama_kv_cells.hpp); this only stores, moves and re-rotates.
#include <cstdint>
#include <vector>

#include "kernels/ggml_kv_type.hpp"
#include "kernels/rope.hpp"

namespace kvsim::kernels {

struct LlamaKvTensorShape {
  int64_t n_layer = 0, kv_size = 0, n_embd_k = 0, n_embd_v = 0;
  GgmlType type_k = GgmlType::f16, type_v = GgmlType::f16;
  bool v_trans = true;
};

class LlamaKvTensors {
 public:
  // Throws std::invalid_argument for a quantized V with v_trans or rows
  // that are not whole blocks.
  explicit LlamaKvTensors(const LlamaKvTensorShape& shape);

  const LlamaKvTensorShape& shape() const { return shape_; }
  void write_k(int64_t layer, int64_t cell, const float* row);
  void write_v(int64_t layer, int64_t cell, const float* row);
  void read_k(int64_t layer, int64_t cell, float* row) const;
  void read_v(int64_t layer, int64_t cell, float* row) const;
  // A defragmentation move: K and V of every layer from `src` to `dst`.
  void move_cell(int64_t src, int64_t dst);
  // The K-shift of one cell: its keys in every layer, decoded, re-rotated
  // by `delta` positions (RoPE composes) and stored again.
  void shift_k(int64_t cell, int64_t delta, int64_t heads, float theta, RopeStyle style);
  // Bytes of k_l / v_l of one layer (ggml_nbytes).
  int64_t k_l_bytes() const { return static_cast<int64_t>(k_[0].size()); }
  int64_t v_l_bytes() const { return static_cast<int64_t>(v_[0].size()); }

 private:
  LlamaKvTensorShape shape_;
  int64_t k_row_ = 0, v_row_ = 0, v_value_ = 0;  // bytes
  std::vector<std::vector<uint8_t>> k_, v_;
};

}  // namespace kvsim::kernels
