#include "sim/cache/pool_sizing.hpp"

#include <cmath>

namespace kvsim {

Bytes derived_activation_reserve(const ModelSpec& model, int64_t tp, int64_t max_batched_tokens,
                                 int64_t max_num_seqs) {
  const int64_t a = model.activation_bytes();
  const int64_t per_token = (2 * model.hidden_size + 3 * model.intermediate_size / tp) * a;
  const int64_t logits = max_num_seqs * (model.vocab_size / tp) * 4;
  return max_batched_tokens * per_token + logits;
}

PoolSizing size_paged_pool(const ModelSpec& model, const PoolSizingInput& in) {
  PoolSizing s;
  s.kv_bytes_per_token = model.kv_bytes_per_token(in.kv_dtype_bytes, in.tp);
  s.block_bytes = s.kv_bytes_per_token * in.block_size;
  if (in.kv_groups_by_attention) s.groups = kv_cache_groups(model);
  if (s.groups.hybrid()) {
    s.block_bytes = s.groups.page_layers * in.block_size *
                    model.kv_bytes_per_token_per_layer(in.kv_dtype_bytes, in.tp);
  }
  s.weights_bytes = model.weight_bytes_per_rank(in.tp, in.ep);
  s.activation_reserve = in.activation_reserve.value_or(
      derived_activation_reserve(model, in.tp, in.max_batched_tokens, in.max_num_seqs));
  // floor(memory * fraction): the fraction is a user-facing decimal, the
  // budget an integer number of bytes.
  s.budget =
      static_cast<Bytes>(std::floor(static_cast<double>(in.device_memory) * in.memory_fraction));
  s.kv_budget = s.budget - s.weights_bytes - s.activation_reserve;
  s.num_blocks = (s.kv_budget > 0 && s.block_bytes > 0) ? s.kv_budget / s.block_bytes : 0;
  s.capacity_tokens = s.num_blocks * in.block_size;
  if (s.groups.hybrid())
    s.capacity_tokens =
        s.num_blocks / (s.groups.full_groups + s.groups.sliding_groups) * in.block_size;
  s.host_blocks = s.block_bytes > 0 ? in.swap_space / s.block_bytes : 0;
  const auto chunk_budget = static_cast<Bytes>(
      std::floor(static_cast<double>(in.device_memory) * in.chunk_pool_fraction));
  s.chunk_pool_blocks = s.block_bytes > 0 ? chunk_budget / s.block_bytes : 0;
  s.chunk_pool_bytes = s.chunk_pool_blocks * s.block_bytes;
  return s;
}

}  // namespace kvsim
