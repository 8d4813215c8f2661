// chunk_lru's checks (seed 003): the main pool, the chunk pool and the
// reserve share the device's memory.
#include <fmt/format.h>

#include "sim/cache/policy_checks.hpp"
#include "sim/scenario/scenario.hpp"

namespace kvsim {

void chunk_lru_policy_checks(const ScenarioSpec& s, config::LoadContext& ctx) {
  auto at = [&](const std::string& key) { return ctx.location_of(key); };
  const double main = s.cache.main_pool_fraction;
  const double chunk = s.cache.chunk_pool_fraction;
  if (main + chunk > 1.0 + 1e-9) {
    ctx.diagnostics.error(
        at("kv_cache.chunk_pool_fraction"), "kv_cache.chunk_pool_fraction",
        fmt::format("main_pool_fraction {} + chunk_pool_fraction {} = {} is more than the device's "
                    "memory",
                    main, chunk, main + chunk),
        "a sum of at most 1 (seed 003: 0.70 main + 0.15 chunk, 0.15 left in reserve)");
  }
  // memory_fraction is a shared key of kv_cache, but chunk_lru's main pool
  // takes its place (ScenarioSpec::pool_input).
  if (ctx.locations.count("kv_cache.memory_fraction") > 0) {
    ctx.diagnostics.error(at("kv_cache.memory_fraction"), "kv_cache.memory_fraction",
                          "does not apply to chunk_lru: its main pool (weights, activations, "
                          "main KV) is sized by main_pool_fraction",
                          "remove it and set main_pool_fraction / chunk_pool_fraction");
  }
  const PoolSizing sz = size_paged_pool(s.model, s.pool_input());
  if (sz.chunk_pool_blocks < 1) {
    ctx.diagnostics.error(
        at("kv_cache.chunk_pool_fraction"), "kv_cache.chunk_pool_fraction",
        fmt::format("{} x {} holds no block of {}", format_bytes(s.device.memory_bytes), chunk,
                    format_bytes(sz.block_bytes)),
        "a chunk pool of at least one block");
  }
}

}  // namespace kvsim
