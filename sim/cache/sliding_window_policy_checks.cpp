// sliding_window's checks (seed 002): it needs a window; over paged the
// blocks leave the window, so prefix caching is off; over a Genie mode the
// window must fit the smallest cache dim, ctx_size - largest variant. The
// base's own checks run from here: composition, not a second list.
#include <fmt/format.h>

#include "sim/cache/policy_checks.hpp"
#include "sim/cache/policy_registry.hpp"
#include "sim/scenario/scenario.hpp"

namespace kvsim {

void sliding_window_policy_checks(const ScenarioSpec& s, config::LoadContext& ctx) {
  auto at = [&](const std::string& key) { return ctx.location_of(key); };
  const CacheConfig& c = s.cache;
  if (c.window < 1) {
    ctx.diagnostics.error(at("kv_cache.window"), "kv_cache.window",
                          "sliding_window needs the number of tokens it keeps",
                          "window: 1.. (at most ctx_size - largest AR variant on a Genie mode)");
  }
  if (!is_genie_policy(c) && c.prefix_caching &&
      ctx.locations.count("kv_cache.prefix_caching") > 0) {
    ctx.diagnostics.error(at("kv_cache.prefix_caching"), "kv_cache.prefix_caching",
                          "prefix caching is off under a sliding window (blocks leave the window)",
                          "prefix_caching: false, or remove it");
  }
  run_cache_policy_checks(c.update_mode, s, ctx);
  if (!is_genie_policy(c)) return;
  const int64_t largest = c.ar_variants.empty() ? 1 : c.ar_variants.back();
  if (c.window > 0 && largest < c.ctx_size && c.window > c.ctx_size - largest) {
    ctx.diagnostics.error(
        at("kv_cache.window"), "kv_cache.window",
        fmt::format("{} tokens do not fit the cache: ctx_size {} - largest variant AR-{} = {}",
                    c.window, c.ctx_size, largest, c.ctx_size - largest),
        fmt::format("1..{}", c.ctx_size - largest));
  }
}

}  // namespace kvsim
