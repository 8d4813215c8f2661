#include "sim/cache/llama_kv_sizing.hpp"

namespace kvsim {

LlamaKvSizing llama_kv_sizing(const ModelSpec& model, int64_t kv_size, kernels::GgmlType type_k,
                              kernels::GgmlType type_v, int64_t n_gpu_layers) {
  LlamaKvSizing s;
  s.kv_size = kv_size;
  s.n_layer = model.num_hidden_layers;
  // n_embd_head_k * n_head_kv (seed 004: hparams.n_embd_k_gqa()).
  s.n_embd_k_gqa = model.head_dim * model.num_key_value_heads;
  s.n_embd_v_gqa = s.n_embd_k_gqa;
  s.type_k = type_k;
  s.type_v = type_v;
  s.n_gpu_layers = n_gpu_layers;
  (void)s.k_cell_bytes();  // throws unless a row is whole blocks
  (void)s.v_cell_bytes();
  return s;
}

}  // namespace kvsim
