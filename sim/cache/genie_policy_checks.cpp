// The Genie update modes' checks (seed 002): every AR variant must leave a
// cache dim (ctx_size - n > 0), and pointer_shift's headroom must take one
// pass of the largest variant past the view.
#include <fmt/format.h>

#include "sim/cache/policy_checks.hpp"
#include "sim/scenario/scenario.hpp"

namespace kvsim {

void genie_buffer_checks(const ScenarioSpec& s, config::LoadContext& ctx) {
  const CacheConfig& c = s.cache;
  // Genie's KV tensors hold K and V per head in fp16 or int8 with one
  // quantisation per tensor (seed 002): neither fp8 rows nor a latent cache.
  if (c.dtype.rfind("fp8", 0) == 0) {
    ctx.diagnostics.error(ctx.location_of("kv_cache.dtype"), "kv_cache.dtype",
                          fmt::format("Genie's KV buffers do not store {}", c.dtype),
                          "fp16, bf16, int8 or fp32");
  }
  if (s.model.mla.enabled()) {
    ctx.diagnostics.error(ctx.location_of("model"), "model",
                          fmt::format("{} caches a latent (multi-head latent attention); Genie's "
                                      "buffers hold K and V per head",
                                      s.model.name),
                          "a model with per-head K and V on an HTP");
  }
  for (int64_t v : c.ar_variants) {
    if (v >= c.ctx_size) {
      ctx.diagnostics.error(
          ctx.location_of("kv_cache.ar_variants"), "kv_cache.ar_variants",
          fmt::format("AR-{} is not below ctx_size {}: its cache dim ctx_size - {} leaves no room "
                      "for the past",
                      v, c.ctx_size, v),
          fmt::format("variants below ctx_size {}", c.ctx_size));
    }
  }
}

void pointer_shift_policy_checks(const ScenarioSpec& s, config::LoadContext& ctx) {
  genie_buffer_checks(s, ctx);
  const CacheConfig& c = s.cache;
  const int64_t largest = c.ar_variants.empty() ? 1 : c.ar_variants.back();
  if (c.pointer_shift_headroom > 0 && c.pointer_shift_headroom < largest) {
    ctx.diagnostics.error(
        ctx.location_of("kv_cache.pointer_shift_headroom"), "kv_cache.pointer_shift_headroom",
        fmt::format("{} columns cannot take one AR-{} pass past the view", c.pointer_shift_headroom,
                    largest),
        fmt::format("0 (= ctx_size) or at least the largest variant, {}", largest));
  }
}

}  // namespace kvsim
