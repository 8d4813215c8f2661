#pragma once
// The counters of the tiers below device HBM (sim/cache/tiers/): one object
// per tier name, zeros when the scenario has no such tier. Hit rates share
// kv_cache.prefix_hit_rate's denominator (prompt tokens looked up at first
// admissions), so device_hit_rate + the tiers' hit rates = prefix_hit_rate.
// TierChain::report fills them; and the section that writes them.
#include <cstdint>
#include <string_view>

#include "base/units.hpp"
#include "sim/core/metrics_section.hpp"

namespace kvsim {

struct KvTierMetrics {
  double hit_rate = 0;
  int64_t hit_tokens = 0;   // prompt tokens read back from this tier at first admissions
  Bytes bytes_read = 0;     // tier -> device, all ranks
  Bytes bytes_written = 0;  // device or the tier above -> tier, all ranks
  uint64_t evictions = 0;
  int64_t blocks_held = 0;         // at the end of the run
  int64_t pinned_peak_blocks = 0;  // device blocks held at once by async stores in flight
};

struct KvTiersMetrics {
  double device_hit_rate = 0;
  double load_time_s = 0;    // summed over steps, before any overlap with compute
  double store_wait_s = 0;   // steps held by stores (sync, evicted blocks, a full staging buffer)
  double lookup_time_s = 0;  // metadata round trips of prefix lookups in the tiers
  KvTierMetrics dram, ssd, global;
  // The object of a tier name (kv_tier_names()), null for another name.
  KvTierMetrics* tier(std::string_view name);
  const KvTierMetrics* tier(std::string_view name) const;
};

MetricsSection kv_tiers_metrics_section();

}  // namespace kvsim
