#include "cli/studies/capacity_llama_cells.hpp"

#include <fmt/format.h>

#include <algorithm>
#include <stdexcept>

#include "base/units.hpp"
#include "sim/cache/llama_kv_sizing.hpp"

namespace kvsim {

void fill_llama_cells_capacity_row(CapacityRow& r, const ModelSpec& model, const PoolSizing& pool) {
  const auto type = kernels::parse_ggml_type(r.kv_dtype);
  if (!type) throw std::invalid_argument(fmt::format("'{}' is not a ggml type", r.kv_dtype));
  const LlamaKvSizing s = llama_kv_sizing(model, r.context, *type, *type);
  r.kv_bytes_per_token = s.cell_bytes();
  r.kv_bytes_at_context = s.total_bytes();
  r.block_bytes = 0;
  r.num_blocks = 0;
  const Bytes left = pool.budget - pool.weights_bytes - pool.activation_reserve;
  r.capacity_tokens = left > 0 ? left / s.cell_bytes() : 0;
  r.max_concurrent_seqs = r.capacity_tokens / r.context;
  r.max_context_tokens = std::min(r.capacity_tokens, model.max_position_embeddings);
  r.fits = left >= r.kv_bytes_at_context;
  r.shortfall_bytes = r.fits ? 0 : r.kv_bytes_at_context - std::max<Bytes>(left, 0);
  if (r.fits)
    r.note = fmt::format("llama.cpp cells: {} K and V, {} at n_ctx {}", r.kv_dtype,
                         format_bytes(r.kv_bytes_at_context), r.context);
  else if (left <= 0)
    r.note = fmt::format("does not fit: weights {} + activations {} already exceed the budget {}",
                         format_bytes(pool.weights_bytes), format_bytes(pool.activation_reserve),
                         format_bytes(pool.budget));
  else
    r.note = fmt::format("does not fit: the {} cache at n_ctx {} is {} beyond the budget",
                         r.kv_dtype, r.context, format_bytes(r.shortfall_bytes));
}

}  // namespace kvsim
