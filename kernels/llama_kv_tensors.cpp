#include "kernels/llama_kv_tensors.hpp"

#include <fmt/format.h>

#include <cstring>
#include <stdexcept>

namespace kvsim::kernels {

LlamaKvTensors::LlamaKvTensors(const LlamaKvTensorShape& shape) : shape_(shape) {
  if (shape_.n_layer <= 0 || shape_.kv_size <= 0 || shape_.n_embd_k <= 0 || shape_.n_embd_v <= 0)
    throw std::invalid_argument("llama kv tensors: every dimension must be positive");
  if (shape_.v_trans && ggml_type_traits(shape_.type_v).quantized)
    throw std::invalid_argument(fmt::format(
        "a {} V cache cannot be stored transposed (llama.cpp quantizes V only with flash "
        "attention)",
        ggml_type_traits(shape_.type_v).name));
  k_row_ = ggml_row_bytes(shape_.type_k, shape_.n_embd_k);
  v_row_ = ggml_row_bytes(shape_.type_v, shape_.n_embd_v);
  v_value_ = ggml_type_traits(shape_.type_v).quantized ? 0 : ggml_row_bytes(shape_.type_v, 1);
  const auto layers = static_cast<size_t>(shape_.n_layer);
  k_.assign(layers, std::vector<uint8_t>(static_cast<size_t>(k_row_ * shape_.kv_size)));
  v_.assign(layers, std::vector<uint8_t>(static_cast<size_t>(v_row_ * shape_.kv_size)));
}

void LlamaKvTensors::write_k(int64_t layer, int64_t cell, const float* row) {
  ggml_encode_row(shape_.type_k, row, shape_.n_embd_k,
                  k_[static_cast<size_t>(layer)].data() + cell * k_row_);
}

void LlamaKvTensors::read_k(int64_t layer, int64_t cell, float* row) const {
  ggml_decode_row(shape_.type_k, k_[static_cast<size_t>(layer)].data() + cell * k_row_,
                  shape_.n_embd_k, row);
}

void LlamaKvTensors::write_v(int64_t layer, int64_t cell, const float* row) {
  uint8_t* v = v_[static_cast<size_t>(layer)].data();
  if (!shape_.v_trans) {
    ggml_encode_row(shape_.type_v, row, shape_.n_embd_v, v + cell * v_row_);
    return;
  }
  for (int64_t j = 0; j < shape_.n_embd_v; ++j)
    ggml_store_value(shape_.type_v, v, j * shape_.kv_size + cell, row[j]);
}

void LlamaKvTensors::read_v(int64_t layer, int64_t cell, float* row) const {
  const uint8_t* v = v_[static_cast<size_t>(layer)].data();
  if (!shape_.v_trans) {
    ggml_decode_row(shape_.type_v, v + cell * v_row_, shape_.n_embd_v, row);
    return;
  }
  for (int64_t j = 0; j < shape_.n_embd_v; ++j)
    row[j] = ggml_load_value(shape_.type_v, v, j * shape_.kv_size + cell);
}

void LlamaKvTensors::move_cell(int64_t src, int64_t dst) {
  for (int64_t l = 0; l < shape_.n_layer; ++l) {
    uint8_t* k = k_[static_cast<size_t>(l)].data();
    std::memcpy(k + dst * k_row_, k + src * k_row_, static_cast<size_t>(k_row_));
    uint8_t* v = v_[static_cast<size_t>(l)].data();
    if (!shape_.v_trans) {
      std::memcpy(v + dst * v_row_, v + src * v_row_, static_cast<size_t>(v_row_));
      continue;
    }
    for (int64_t j = 0; j < shape_.n_embd_v; ++j)
      std::memcpy(v + (j * shape_.kv_size + dst) * v_value_,
                  v + (j * shape_.kv_size + src) * v_value_, static_cast<size_t>(v_value_));
  }
}

void LlamaKvTensors::shift_k(int64_t cell, int64_t delta, int64_t heads, float theta,
                             RopeStyle style) {
  std::vector<float> row(static_cast<size_t>(shape_.n_embd_k));
  for (int64_t l = 0; l < shape_.n_layer; ++l) {
    read_k(l, cell, row.data());
    rerotate_rope(row.data(), heads, shape_.n_embd_k / heads, delta, theta, style);
    write_k(l, cell, row.data());
  }
}

}  // namespace kvsim::kernels
