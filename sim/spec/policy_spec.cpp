#include "sim/spec/policy_spec.hpp"

#include "sim/cache/llama_backend_cost.hpp"

#include <algorithm>

namespace kvsim {

PoolCapacity BlockPoolContract::capacity(const ModelSpec& model, const std::string& dtype,
                                         int64_t context, const PoolSizing& s) const {
  (void)model;
  (void)dtype;
  PoolCapacity c;
  c.kv_bytes_per_token = s.kv_bytes_per_token;
  c.kv_bytes_at_context = s.kv_bytes_per_token * context;  // the caller checked its range
  c.block_bytes = s.block_bytes;
  c.num_blocks = s.num_blocks;
  c.capacity_tokens = s.capacity_tokens;
  // Blocks (pages, with KV cache groups) one sequence holds at `context`.
  const int64_t bs = block_size();
  const int64_t blocks_per_seq =
      s.groups.hybrid() ? s.groups.pages_held(context, bs) : (context + bs - 1) / bs;
  c.max_concurrent_seqs = blocks_per_seq > 0 ? s.num_blocks / blocks_per_seq : 0;
  // Fits = the weights, the activation reserve and at least one block within
  // the budget (the scenario check of SPEC 4).
  c.fits = s.num_blocks >= 1;
  if (!c.fits)
    c.shortfall_bytes = s.weights_bytes + s.activation_reserve + s.block_bytes - s.budget;
  if (s.chunk_pool) {
    c.main_pool_bytes = s.num_blocks * s.block_bytes;
    c.chunk_pool_bytes = s.chunk_pool_bytes;
    c.chunk_pool_blocks = s.chunk_pool_blocks;
    c.chunk_pool_tokens = s.chunk_pool_blocks * bs;
  }
  return c;
}

std::string BlockPoolContract::capacity_sizing_text() const {
  return "Paged KV pool per device (per tensor-parallel rank), "
         "SPEC 6 sizing: block = 2 x layers x block_size x kv_heads/tp x head_dim x "
         "dtype bytes (latent attention: layers x block_size x (kv_lora_rank + "
         "qk_rope_head_dim) x dtype bytes, whole on every rank); blocks = floor((memory x "
         "fraction - weights - activations) / block). With expert parallelism (tp (ep N)) "
         "each rank holds experts / N whole experts. With pipeline stages (tp x pp N) each "
         "stage's devices hold its layers (the embedding on the first, the LM head on the "
         "last); the figures are those of the stage with the fewest blocks, which sets "
         "every stage's pool.\n\n";
}

std::unique_ptr<LlamaBackendCost> PolicySpec::host_work(const InstanceSpec& s) const {
  (void)s;
  return nullptr;
}

std::string PolicySpec::key_path(std::string_view key) const {
  const auto it = key_paths_.find(key);
  return it != key_paths_.end() ? it->second : "kv_cache." + std::string(key);
}

}  // namespace kvsim
