#pragma once
// Sizing of llama.cpp's KV cache (seed 004, llama_kv_cache_init): per layer
// one 1-D tensor k_l of n_embd_k_gqa * kv_size elements of type_k and one
// v_l of n_embd_v_gqa * kv_size of type_v, kv_size = n_ctx cells, where
// n_embd_k_gqa = n_embd_head_k * n_head_kv. Bytes follow ggml_row_size
// (kernels/ggml_kv_type.hpp), so quantized types count whole blocks of 32.
// llama-2-7b at n_ctx 1024, f16: 32 layers x 2 x 4096 x 1024 x 2 B = 512 MiB.
//
// With an n_gpu_layers split, llama.cpp offloads the last n_gpu_layers
// layers; their KV sits in the accelerator's buffers, the others' in host
// memory (one backend buffer per buffer type, seed 004 `bufs`).
#include <algorithm>
#include <cstdint>

#include "base/units.hpp"
#include "kernels/ggml_kv_type.hpp"
#include "models/model_spec.hpp"

namespace kvsim {

struct LlamaKvSizing {
  int64_t kv_size = 0, n_layer = 0, n_embd_k_gqa = 0, n_embd_v_gqa = 0;
  kernels::GgmlType type_k = kernels::GgmlType::f16, type_v = kernels::GgmlType::f16;
  int64_t n_gpu_layers = -1;  // -1: every layer on the accelerator

  int64_t k_l_elements() const { return n_embd_k_gqa * kv_size; }
  int64_t v_l_elements() const { return n_embd_v_gqa * kv_size; }
  Bytes k_l_bytes() const { return kernels::ggml_row_bytes(type_k, k_l_elements()); }
  Bytes v_l_bytes() const { return kernels::ggml_row_bytes(type_v, v_l_elements()); }
  // One cell's K (V) row in one layer.
  Bytes k_cell_bytes() const { return kernels::ggml_row_bytes(type_k, n_embd_k_gqa); }
  Bytes v_cell_bytes() const { return kernels::ggml_row_bytes(type_v, n_embd_v_gqa); }
  // One cell over every layer, K and V.
  Bytes cell_bytes() const { return n_layer * (k_cell_bytes() + v_cell_bytes()); }
  Bytes total_bytes() const { return n_layer * (k_l_bytes() + v_l_bytes()); }
  int64_t device_layers() const {
    return n_gpu_layers < 0 ? n_layer : std::min<int64_t>(n_gpu_layers, n_layer);
  }
  int64_t host_layers() const { return n_layer - device_layers(); }
  bool on_device(int64_t layer) const { return layer >= host_layers(); }
  Bytes device_bytes() const { return device_layers() * (k_l_bytes() + v_l_bytes()); }
  Bytes host_bytes() const { return host_layers() * (k_l_bytes() + v_l_bytes()); }
};

// Throws std::invalid_argument when a row is not whole blocks of its type.
LlamaKvSizing llama_kv_sizing(const ModelSpec& model, int64_t kv_size, kernels::GgmlType type_k,
                              kernels::GgmlType type_v, int64_t n_gpu_layers = -1);

}  // namespace kvsim
