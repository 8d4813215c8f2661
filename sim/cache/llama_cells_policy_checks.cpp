// llama_cells' scenario checks (seed 004): the Genie buffer checks for its
// micro-batch sizes, a V cache quantized only without v_trans (llama.cpp
// needs flash attention for it), rows of whole blocks, room for a
// micro-batch after n_keep, and numerics left to `kvsim generate` (the
// dialog's numerics observer drives Genie's own buffers).
#include <fmt/format.h>

#include "kernels/ggml_kv_type.hpp"
#include "sim/cache/policy_checks.hpp"
#include "sim/scenario/scenario.hpp"

namespace kvsim {

void llama_cells_policy_checks(const ScenarioSpec& s, config::LoadContext& ctx) {
  genie_buffer_checks(s, ctx);
  const CacheConfig& c = s.cache;
  const auto at = [&](const std::string& key) { return ctx.location_of(key); };
  const auto tv = kernels::parse_ggml_type(c.type_v);
  if (tv && c.v_trans && kernels::ggml_type_traits(*tv).quantized)
    ctx.diagnostics.error(at("kv_cache.type_v"), "kv_cache.type_v",
                          fmt::format("a {} V cache cannot be stored transposed: llama.cpp "
                                      "quantizes V only with flash attention",
                                      c.type_v),
                          "f16, bf16 or f32, or v_trans: false");
  const int64_t row = s.model.head_dim * s.model.num_key_value_heads;
  for (const auto& [key, name] : {std::pair{"type_k", c.type_k}, std::pair{"type_v", c.type_v}}) {
    const auto t = kernels::parse_ggml_type(name);
    if (t && row % kernels::ggml_type_traits(*t).block_values != 0)
      ctx.diagnostics.error(
          at(std::string("kv_cache.") + key), std::string("kv_cache.") + key,
          fmt::format("{} stores blocks of {} values; a row of {} (KV heads x head_dim) is not "
                      "whole blocks",
                      name, kernels::ggml_type_traits(*t).block_values, row),
          "f16, bf16 or f32");
  }
  const int64_t largest = c.ar_variants.empty() ? 1 : c.ar_variants.back();
  if (c.n_keep + largest > c.ctx_size)
    ctx.diagnostics.error(at("kv_cache.n_keep"), "kv_cache.n_keep",
                          fmt::format("keeping {} tokens leaves no room for an AR-{} micro-batch "
                                      "in ctx_size {}",
                                      c.n_keep, largest, c.ctx_size),
                          fmt::format("0..{}", c.ctx_size - largest));
  if (s.numerics.mode != "off")
    ctx.diagnostics.error(at("numerics.mode"), "numerics.mode",
                          fmt::format("'{}' checks Genie's buffers; llama_cells' numerics run in "
                                      "kvsim generate --policy llama_cells",
                                      s.numerics.mode),
                          "off");
}

}  // namespace kvsim
